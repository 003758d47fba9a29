// How a conversation becomes prompt ids, the same on every path that takes
// one (/v1/chat/completions, a shared-memory chat record, `generate --chat`):
// finding and parsing the model's chat template once (load_chat_template),
// then per request render_chat_prompt: the template with the model's bos/eos
// strings, the rendered text encoded (special-token text the template writes,
// <|im_start|> or <s>, becomes special ids; bos is added by the tokenizer
// only when the template did not already write it), and the ids that end an
// assistant turn added to the request's stop ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/chat_template_source.h"
#include "jinja/chat_template.h"
#include "zerolayer/status.h"

namespace zl {

class Tokenizer;

struct LoadedChatTemplate {
  std::shared_ptr<const ChatTemplate> chat_template;
  std::string origin;
  std::string bos_token;  // the strings the template sees
  std::string eos_token;
  // The tokenizer's eos and those common end-of-turn tokens ("<|im_end|>",
  // "<|eot_id|>", "<|end|>", ...) that are single special tokens of its vocabulary.
  std::vector<int32_t> end_of_turn_ids;
  // Tool-call arguments in the history reach the template as objects
  // (transformers' convention), or, for a template that cannot render those
  // (DeepSeek V3.1 concatenates them as text), as the JSON text sent.
  bool object_arguments = true;
  // A tool-call turn's absent content reaches the template as "" (Qwen3's
  // reads it as a string), or as null for a template that renders the calls
  // only then (DeepSeek R1's: `message['content'] is none`).
  bool null_content = false;
};

struct ChatPrompt {
  std::string text;          // what the template wrote
  std::vector<int32_t> ids;  // its encoding
};

// How the template renders an assistant turn of tool calls
// (LoadedChatTemplate::object_arguments and null_content): the first of
// content "" or null, then arguments as an object or as JSON text, whose
// rendering succeeds and shows the call (llama.cpp probes its templates for
// the same reason); a template that shows none gets "" and objects.
struct ToolCallRendering {
  bool object_arguments = true;
  bool null_content = false;
};
ToolCallRendering probe_tool_call_rendering(const ChatTemplate& chat_template);

// Resolves (resolve_chat_template's order) and parses the template of the
// model read from `model_path` (a HF folder or a GGUF file: ModelSource::path,
// where a Hub id resolved to; "" for dummy models), with an optional
// --tokenizer path, the GGUF's template text and an override ("", "chatml"
// or a file).
StatusOr<LoadedChatTemplate> load_chat_template(const std::string& model_path, const std::string& tokenizer_path,
                                                const std::string& gguf_template, const std::string& override_template,
                                                const Tokenizer* tokenizer);

// The template applied to `messages` with `options`, whose bos_token and
// eos_token are set from `chat` (the /apply-template answer). With
// continue_final_message, the text is cut after the last place the final
// message's (stripped) content appears, as transformers cuts it; a content
// that is not a string, or that the text does not hold, is an error.
StatusOr<std::string> render_chat_text(const LoadedChatTemplate& chat, const nlohmann::ordered_json& messages,
                                       ChatTemplateOptions options);

// Whether a rendered `text` starts with the template's bos, so that its
// encoding adds none (llama.cpp's rule for chat prompts).
bool template_wrote_bos(const LoadedChatTemplate& chat, std::string_view text);

// render_chat_text, then the text's ids: parse_special=true, and bos added only
// when the text does not already start with the template's bos. Text over
// `max_text_bytes` is not encoded: out_of_range naming "messages" (so that a
// huge conversation costs a render, not a tokenization). An empty encoding
// is invalid_argument naming "messages".
StatusOr<ChatPrompt> render_chat_prompt(const LoadedChatTemplate& chat, const Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& messages, const ChatTemplateOptions& options,
                                        size_t max_text_bytes = SIZE_MAX);

// A chat request stops at the end of the assistant's turn: `chat`'s
// end-of-turn ids join `stop_token_ids`, unless the request ignores eos.
void add_end_of_turn_stops(const LoadedChatTemplate& chat, bool ignore_eos, std::vector<int32_t>& stop_token_ids);

}  // namespace zl
