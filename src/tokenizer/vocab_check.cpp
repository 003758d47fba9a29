#include "tokenizer/vocab_check.h"

#include <cstdint>
#include <string_view>

namespace zl {
namespace {

Status check_id(std::string_view field, int32_t id, size_t num_tokens, bool allow_none) {
  if ((allow_none && id == -1) || (id >= 0 && static_cast<size_t>(id) < num_tokens)) {
    return ok_status();
  }
  return invalid_argument("vocabulary field ", field, " = ", id, " is out of range (vocab size ",
                          num_tokens, allow_none ? "; -1 means none)" : ")");
}

}  // namespace

Status validate_vocab(const VocabData& vocab) {
  const size_t n = vocab.tokens.size();
  if (n == 0) return invalid_argument("vocabulary field tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return invalid_argument("vocabulary field tokens has ", n, " entries, more than int32 ids allow");
  }
  for (size_t i = 0; i < n; ++i) {
    if (vocab.tokens[i].empty()) return invalid_argument("vocabulary field tokens[", i, "] is empty");
  }
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    return invalid_argument("vocabulary field scores has ", vocab.scores.size(),
                            " entries but tokens has ", n);
  }
  if (!vocab.token_types.empty() && vocab.token_types.size() != n) {
    return invalid_argument("vocabulary field token_types has ", vocab.token_types.size(),
                            " entries but tokens has ", n);
  }
  for (size_t i = 0; i < vocab.token_types.size(); ++i) {
    int32_t t = vocab.token_types[i];
    if (t < static_cast<int32_t>(TokenType::kUndefined) || t > static_cast<int32_t>(TokenType::kByte)) {
      return invalid_argument("vocabulary field token_types[", i, "] = ", t,
                              " is not a token type (0..6)");
    }
  }
  ZL_RETURN_IF_ERROR(check_id("bos_id", vocab.bos_id, n, true));
  ZL_RETURN_IF_ERROR(check_id("eos_id", vocab.eos_id, n, true));
  ZL_RETURN_IF_ERROR(check_id("unk_id", vocab.unk_id, n, true));
  ZL_RETURN_IF_ERROR(check_id("pad_id", vocab.pad_id, n, true));
  for (size_t i = 0; i < vocab.eot_ids.size(); ++i) {
    ZL_RETURN_IF_ERROR(check_id(str_cat("eot_ids[", i, "]"), vocab.eot_ids[i], n, false));
  }
  return ok_status();
}

}  // namespace zl
