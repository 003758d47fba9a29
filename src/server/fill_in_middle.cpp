#include "server/fill_in_middle.h"

#include <array>

namespace zl::server {
namespace {

// The id of a token spelled `name`, when `name` encodes as that one token.
std::optional<int32_t> single_token(const Tokenizer& tokenizer, std::string_view name) {
  const std::vector<int32_t> ids = tokenizer.encode(name, /*add_special=*/false, /*parse_special=*/true);
  if (ids.size() != 1 || tokenizer.token_text(ids[0]) != name) return std::nullopt;
  return ids[0];
}

}  // namespace

std::optional<FimTokens> find_fim_tokens(const Tokenizer& tokenizer) {
  using Names = std::array<std::string_view, 3>;
  static constexpr Names kFamilies[] = {{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
                                        {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
                                        {"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"}};
  for (const Names& names : kFamilies) {
    const std::optional<int32_t> prefix = single_token(tokenizer, names[0]);
    const std::optional<int32_t> suffix = single_token(tokenizer, names[1]);
    const std::optional<int32_t> middle = single_token(tokenizer, names[2]);
    if (prefix && suffix && middle) return FimTokens{*prefix, *suffix, *middle};
  }
  return std::nullopt;
}

std::vector<int32_t> fill_in_middle_prompt(const Tokenizer& tokenizer, const FimTokens& fim, std::string_view prefix,
                                           std::string_view suffix) {
  std::vector<int32_t> ids;
  const SpecialTokenIds& special = tokenizer.special_ids();
  if (special.add_bos && special.bos >= 0) ids.push_back(special.bos);
  ids.push_back(fim.prefix);
  for (int32_t id : tokenizer.encode(prefix, /*add_special=*/false)) ids.push_back(id);
  ids.push_back(fim.suffix);
  for (int32_t id : tokenizer.encode(suffix, /*add_special=*/false)) ids.push_back(id);
  ids.push_back(fim.middle);
  return ids;
}

}  // namespace zl::server
