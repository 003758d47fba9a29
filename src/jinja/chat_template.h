// Chat templates: the Jinja2 programs Hugging Face models ship to turn a list
// of messages into one prompt string. ChatTemplate renders them the way
// transformers' apply_chat_template does (jinja2 ImmutableSandboxedEnvironment,
// trim_blocks, lstrip_blocks, loopcontrols, transformers' tojson, globals
// raise_exception / strftime_now / namespace / dict), byte for byte on the
// goldens in tests/golden/chat_template/.
//
//   ZL_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::parse(source, "tokenizer_config.json"));
//   ChatTemplateOptions o;  o.bos_token = "<s>";  o.add_generation_prompt = true;
//   ZL_ASSIGN_OR_RETURN(std::string prompt, apply_chat_template(t, messages, o));
//
// JSON goes in as nlohmann::ordered_json so that object keys keep their order
// (templates print tool schemas with tojson; Python dicts keep insertion order).
// A template cannot read files or run commands; a hostile one is stopped by
// the limits (output size, loop iterations, recursion) with an error. Errors
// read "<name>: line L, column C: <message>"; raise_exception(msg) gives msg.
// A ChatTemplate is immutable and may be rendered from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zerolayer/status.h"

namespace zl {
namespace jinja {
struct Program;
}

struct ChatTemplateLimits {
  size_t max_output_bytes = 16u << 20;
  int64_t max_loop_iterations = 1'000'000;
  int max_call_depth = 100;
};

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  // vLLM's and transformers' continue_final_message: the text ends right
  // after the final message's content, left open for the model to go on
  // (cut by render_chat_text in bundle/chat_prompt.h; the template itself
  // does not see it).
  bool continue_final_message = false;
  std::string bos_token;
  std::string eos_token;
  nlohmann::ordered_json tools;      // a list of tool schemas, or null for none
  nlohmann::ordered_json documents;  // a list of {"title", "text"}, or null
  // More template variables (enable_thinking, reasoning_effort, ...). An
  // object; its keys override the ones above except messages.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

class ChatTemplate {
 public:
  // Parses `source`; syntax errors (and unknown filters or tests, which jinja2
  // rejects at compile time) come back with line and column.
  static StatusOr<ChatTemplate> parse(std::string_view source, std::string name = "chat template",
                                      const ChatTemplateLimits& limits = {});

  // Renders with `context` (an object) as the template's variables.
  StatusOr<std::string> render(const nlohmann::ordered_json& context) const;

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }
  // strftime_now() then formats this UTC time instead of the clock (tests).
  void set_fixed_time(std::optional<int64_t> unix_seconds) { fixed_time_ = unix_seconds; }

 private:
  std::string name_;
  std::string source_;
  std::shared_ptr<const jinja::Program> program_;
  ChatTemplateLimits limits_;
  std::optional<int64_t> fixed_time_;
};

// transformers' apply_chat_template(messages, tokenize=False, ...): null fields
// of messages are dropped, reasoning fields aliased ("reasoning_content",
// "thinking", "reasoning"), then the template renders with messages, tools,
// documents, add_generation_prompt, bos_token, eos_token and `extra`.
StatusOr<std::string> apply_chat_template(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                                          const ChatTemplateOptions& options);

// A plain ChatML template (<|im_start|>role\ncontent<|im_end|>\n ...), for
// `--chat-template chatml` and models that ship none.
std::string_view chatml_template_source();

}  // namespace zl
