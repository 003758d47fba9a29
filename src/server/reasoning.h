// Reasoning in a chat model's output: the text between <think> and
// </think> (DeepSeek R1, QwQ, Qwen3, DeepSeek V3.1, Granite 3.3 when asked
// to think) goes to the message's "reasoning" (and "reasoning_content", its
// older name that llama-server and DeepSeek's API use) instead of its
// "content", as vLLM's --reasoning-parser deepseek_r1 / qwen3 do.
//
// Where the output starts is read from the rendered prompt: one that ends
// with <think> (R1's and QwQ's generation prompt, V3.1 in thinking mode)
// starts the output inside the reasoning; otherwise a <think> at the very
// start of the output opens it (Qwen3, whose prompt ends with an empty
// <think></think> pair when enable_thinking is false, then answers plainly).
// A <think> that the model writes anyway is dropped. An output that never
// closes its reasoning is all reasoning, as in vLLM.
// The text is split as it is, whitespace included.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace zl::server {

// serve --reasoning-parser: deepseek_r1 and qwen3 (vLLM's names) are the one
// <think> syntax here, read as above.
enum class ReasoningFormat { kThink };

std::optional<ReasoningFormat> reasoning_format_named(std::string_view name);
// "deepseek_r1, qwen3": for --help and errors.
std::string reasoning_format_names();
// Whether a chat template's source teaches <think> ... </think>.
std::optional<ReasoningFormat> detect_reasoning_format(std::string_view template_source);
// Whether the output of a prompt rendered as `prompt` begins inside the reasoning.
bool prompt_opens_reasoning(std::string_view prompt);

// Splits a stream of output text into reasoning and content, piece by
// piece; bytes that may begin a tag wait for the next piece or finish().
class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(bool starts_inside) : starts_inside_(starts_inside) {}

  // Appends what `text` adds to `reasoning` and `content`.
  void feed(std::string_view text, std::string& reasoning, std::string& content);
  // The output ended: what was held goes where it stands.
  void finish(std::string& reasoning, std::string& content);

 private:
  // kStart: before the first non-blank text, which may be <think>.
  enum class State { kStart, kReasoning, kContent };
  bool starts_inside_;
  State state_ = State::kStart;
  std::string held_;
};

}  // namespace zl::server
