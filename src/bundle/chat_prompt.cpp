#include "bundle/chat_prompt.h"

#include <algorithm>
#include <filesystem>

#include "tokenizer/tokenizer.h"

namespace zl {
namespace {

// The folder a model or tokenizer path names: itself, or the file's folder.
std::string folder_of(const std::string& path) {
  std::error_code ec;
  if (path.empty() || path.rfind("dummy:", 0) == 0) return "";
  if (std::filesystem::is_directory(path, ec)) return path;
  if (std::filesystem::is_regular_file(path, ec)) {
    // A GGUF carries its template inside; its folder's tokenizer_config.json is not its own.
    if (path.ends_with(".gguf")) return "";
    return std::filesystem::path(path).parent_path().string();
  }
  return "";
}

}  // namespace

StatusOr<LoadedChatTemplate> load_chat_template(const std::string& model_path, const std::string& tokenizer_path,
                                                const std::string& gguf_template, const std::string& override_template,
                                                const Tokenizer* tokenizer) {
  ChatTemplateRequest request;
  request.model_dir = folder_of(model_path);
  request.tokenizer_dir = folder_of(tokenizer_path);
  request.gguf_template = gguf_template;
  request.override_template = override_template;
  request.tokenizer = tokenizer;
  ZL_ASSIGN_OR_RETURN(ResolvedChatTemplate resolved, resolve_chat_template(request));
  ZL_ASSIGN_OR_RETURN(ChatTemplate parsed, ChatTemplate::parse(resolved.source, resolved.origin));
  LoadedChatTemplate loaded;
  loaded.chat_template = std::make_shared<const ChatTemplate>(std::move(parsed));
  loaded.origin = std::move(resolved.origin);
  loaded.bos_token = std::move(resolved.bos_token);
  loaded.eos_token = std::move(resolved.eos_token);
  return loaded;
}

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, std::string_view text, std::string_view bos_token) {
  bool template_wrote_bos = !bos_token.empty() && text.starts_with(bos_token);
  return tokenizer.encode(text, /*add_special=*/!template_wrote_bos, /*parse_special=*/true);
}

std::vector<int32_t> end_of_turn_token_ids(const Tokenizer& tokenizer) {
  static constexpr std::string_view kEndOfTurn[] = {
      "<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<|return|>",
  };
  std::vector<int32_t> ids;
  if (tokenizer.special_ids().eos >= 0) ids.push_back(tokenizer.special_ids().eos);
  for (std::string_view text : kEndOfTurn) {
    std::vector<int32_t> encoded = tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/true);
    if (encoded.size() != 1 || !tokenizer.is_special(encoded[0])) continue;
    if (std::find(ids.begin(), ids.end(), encoded[0]) == ids.end()) ids.push_back(encoded[0]);
  }
  return ids;
}

}  // namespace zl
