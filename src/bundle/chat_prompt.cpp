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

// transformers' rule: cut after the last occurrence of the final content,
// stripped; keep its trailing blanks only where the text has them too.
Status cut_after_final_message(const nlohmann::ordered_json& messages, std::string& text) {
  const nlohmann::ordered_json* last = messages.empty() ? nullptr : &messages.back();
  if (!last || !last->is_object() || !last->contains("content") || !(*last)["content"].is_string())
    return invalid_argument("messages: continue_final_message needs a final message with text content");
  const std::string_view final_text = (*last)["content"].get_ref<const std::string&>();
  constexpr std::string_view kBlank = " \t\r\n";
  const std::string_view from_first = final_text.substr(std::min(final_text.find_first_not_of(kBlank), final_text.size()));
  const std::string_view stripped = from_first.substr(0, from_first.find_last_not_of(kBlank) + 1);
  const size_t at = text.rfind(stripped);
  if (at == std::string::npos)
    return invalid_argument("messages: continue_final_message: the final message's content is not in the rendered text");
  const bool kept = std::string_view(text).substr(at).starts_with(from_first);
  text.resize(at + (kept ? from_first.size() : stripped.size()));
  return ok_status();
}

}  // namespace

ToolCallRendering probe_tool_call_rendering(const ChatTemplate& chat_template) {
  auto turn = [](const ToolCallRendering& way) {
    const nlohmann::ordered_json arguments{{"a", 1}};
    nlohmann::ordered_json call{{"id", "call_probe"}, {"type", "function"},
                                {"function", {{"name", "zl_probe"}, {"arguments", way.object_arguments ? arguments
                                                                                                 : nlohmann::ordered_json(arguments.dump())}}}};
    return nlohmann::ordered_json::array(
        {{{"role", "user"}, {"content", "x"}},
         {{"role", "assistant"}, {"content", way.null_content ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json("")},
          {"tool_calls", nlohmann::ordered_json::array({call})}}});
  };
  for (bool null_content : {false, true}) {
    for (bool object_arguments : {true, false}) {
      const ToolCallRendering way{object_arguments, null_content};
      StatusOr<std::string> text = apply_chat_template(chat_template, turn(way), {});
      if (text.ok() && text->find("zl_probe") != std::string::npos) return way;
    }
  }
  return {};
}

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
  if (tokenizer) loaded.end_of_turn_ids = end_of_turn_token_ids(*tokenizer);
  const ToolCallRendering rendering = probe_tool_call_rendering(*loaded.chat_template);
  loaded.object_arguments = rendering.object_arguments;
  loaded.null_content = rendering.null_content;
  return loaded;
}

StatusOr<std::string> render_chat_text(const LoadedChatTemplate& chat, const nlohmann::ordered_json& messages,
                                       ChatTemplateOptions options) {
  options.bos_token = chat.bos_token;
  options.eos_token = chat.eos_token;
  StatusOr<std::string> text = apply_chat_template(*chat.chat_template, messages, options);
  if (!text.ok()) return text.status().with_prefix("messages could not be rendered by the chat template");
  if (options.continue_final_message) ZL_RETURN_IF_ERROR(cut_after_final_message(messages, *text));
  return text;
}

bool template_wrote_bos(const LoadedChatTemplate& chat, std::string_view text) {
  return !chat.bos_token.empty() && text.starts_with(chat.bos_token);
}

StatusOr<ChatPrompt> render_chat_prompt(const LoadedChatTemplate& chat, const Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& messages, const ChatTemplateOptions& options,
                                        size_t max_text_bytes) {
  ChatPrompt prompt;
  ZL_ASSIGN_OR_RETURN(prompt.text, render_chat_text(chat, messages, options));
  if (prompt.text.size() > max_text_bytes)
    return out_of_range("messages: the conversation renders to ", prompt.text.size(),
                        " bytes of text, more than the ", max_text_bytes, " bytes the context can be read from");
  prompt.ids = tokenizer.encode(prompt.text, /*add_special=*/!template_wrote_bos(chat, prompt.text), /*parse_special=*/true);
  if (prompt.ids.empty()) return invalid_argument("messages render to an empty prompt");
  return prompt;
}

void add_end_of_turn_stops(const LoadedChatTemplate& chat, bool ignore_eos, std::vector<int32_t>& stop_token_ids) {
  if (!ignore_eos) stop_token_ids.insert(stop_token_ids.end(), chat.end_of_turn_ids.begin(), chat.end_of_turn_ids.end());
}

}  // namespace zl
