#include "chat_prompt.h"

#include <filesystem>

#include "model/model_loader.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/chat_template_source.h"

namespace zl::cli {
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

StatusOr<ChatPrompt> build_chat_prompt(const ModelFlags& flags, const std::string& user_text,
                                       const std::string& chat_template) {
  LoadOptions load;
  load.tokenizer_path = flags.tokenizer;
  ZL_ASSIGN_OR_RETURN(ModelSource source, open_model(flags.model, load));
  if (!source.tokenizer) return source.tokenizer_status.ok() ? not_found(flags.model, ": no tokenizer") : source.tokenizer_status;
  ChatTemplateRequest request;
  request.model_dir = folder_of(flags.model);
  request.tokenizer_dir = folder_of(flags.tokenizer);
  request.gguf_template = source.chat_template;
  request.override_template = chat_template;
  request.tokenizer = source.tokenizer.get();
  ZL_ASSIGN_OR_RETURN(ResolvedChatTemplate resolved, resolve_chat_template(request));
  ZL_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(resolved.source, resolved.origin));

  ChatTemplateOptions options;
  options.add_generation_prompt = true;
  options.bos_token = resolved.bos_token;
  options.eos_token = resolved.eos_token;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "user"}, {"content", user_text}});
  ChatPrompt prompt;
  ZL_ASSIGN_OR_RETURN(prompt.text, apply_chat_template(tmpl, messages, options));

  const Tokenizer& tokenizer = *source.tokenizer;
  bool template_wrote_bos = !resolved.bos_token.empty() && prompt.text.rfind(resolved.bos_token, 0) == 0;
  prompt.ids = tokenizer.encode(prompt.text, /*add_special=*/!template_wrote_bos, /*parse_special=*/true);
  return prompt;
}

}  // namespace zl::cli
