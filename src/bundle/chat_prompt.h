// What `generate --chat` and the HTTP server share to turn a conversation
// into prompt ids: finding and parsing the model's chat template, encoding the
// rendered text (special-token text the template writes, <|im_start|> or <s>,
// becomes special ids; bos is added by the tokenizer only when the template
// did not already write it), and the ids that end an assistant turn.
#pragma once

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
};

// Resolves (resolve_chat_template's order) and parses the template of the
// model read from `model_path` (a HF folder or a GGUF file: ModelSource::path,
// where a Hub id resolved to; "" for dummy models), with an optional
// --tokenizer path, the GGUF's template text and an override ("", "chatml"
// or a file).
StatusOr<LoadedChatTemplate> load_chat_template(const std::string& model_path, const std::string& tokenizer_path,
                                                const std::string& gguf_template, const std::string& override_template,
                                                const Tokenizer* tokenizer);

// The rendered prompt's ids: parse_special=true, and bos added only when the
// text does not already start with `bos_token`.
std::vector<int32_t> encode_chat_prompt(const Tokenizer& tokenizer, std::string_view text, std::string_view bos_token);

// The tokenizer's eos and those common end-of-turn tokens ("<|im_end|>",
// "<|eot_id|>", "<|end|>", ...) that are single special tokens of this
// vocabulary, without duplicates.
std::vector<int32_t> end_of_turn_token_ids(const Tokenizer& tokenizer);

}  // namespace zl
