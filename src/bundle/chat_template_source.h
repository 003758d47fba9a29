// Where a model's chat template comes from, in transformers' order:
//   1. an explicit choice (--chat-template FILE, or "chatml" for the built-in);
//   2. chat_template.jinja in the model (or tokenizer) directory;
//   3. tokenizer_config.json's "chat_template": a string, or a list of
//      {"name", "template"} from which "default" (or a named one) is picked;
//   4. the GGUF key tokenizer.chat_template.
// Also the bos/eos strings the template sees: tokenizer_config.json's
// bos_token/eos_token (a string or an AddedToken {"content": ...}), else the
// tokenizer's own bos/eos token text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "zerolayer/status.h"

namespace zl {

class Tokenizer;

struct ChatTemplateRequest {
  std::string model_dir;          // HF model directory; "" for GGUF and dummy models
  std::string tokenizer_dir;      // a --tokenizer directory, searched before model_dir; may be ""
  std::string gguf_template;      // ModelSource::chat_template (GGUF metadata), may be ""
  std::string override_template;  // "", "chatml", or a path to a template file
  std::string template_name;      // a named template of a list; "" means "default"
  const Tokenizer* tokenizer = nullptr;  // bos/eos text when no tokenizer_config.json says
};

struct ResolvedChatTemplate {
  std::string source;     // the Jinja text
  std::string origin;     // for messages: "tokenizer_config.json", "GGUF tokenizer.chat_template", ...
  std::string bos_token;  // "" when unknown
  std::string eos_token;
};

// Not found (with what was searched and how to fix it) when the model has no template.
StatusOr<ResolvedChatTemplate> resolve_chat_template(const ChatTemplateRequest& request);

// tokenizer_config.json's "chat_template" value: a string, or a list of
// {"name", "template"} of which `name` ("" = "default") is chosen.
StatusOr<std::string> select_chat_template(const nlohmann::ordered_json& value, const std::string& name);

// A special token's text from tokenizer_config.json: "<s>" or {"content": "<s>"}; "" when absent.
std::string special_token_text(const nlohmann::ordered_json& config, const std::string& key);

}  // namespace zl
