// Reasoning in a chat model's output goes to the message's "reasoning" (and
// "reasoning_content", its older name that llama-server and DeepSeek's API
// use) instead of its "content", as vLLM's --reasoning-parser does. Three
// syntaxes (serve --reasoning-parser names in brackets):
//   think       <think> ... </think> (DeepSeek R1, QwQ, Qwen3, DeepSeek V3.1,
//               Granite 3.3 when asked to think) [deepseek_r1, qwen3]
//   command_r   <|START_THINKING|> ... <|END_THINKING|>, the tool plan of
//               Command R7B; its <|START_RESPONSE|> / <|END_RESPONSE|>
//               markers around the text are dropped [command_r7b]
//   harmony     gpt-oss's messages: the analysis channel is the reasoning,
//               the final and commentary channels the text; a message to a
//               recipient (a tool call) goes to the text as written, with
//               its <|start|> header, for the "openai" tool parser [openai_gptoss]
//
// Where a <think> output starts is read from the rendered prompt: one that
// ends with <think> (R1's and QwQ's generation prompt, V3.1 in thinking mode)
// starts the output inside the reasoning; otherwise a <think> at the very
// start of the output opens it (Qwen3, whose prompt ends with an empty
// <think></think> pair when enable_thinking is false, then answers plainly).
// A <think> that the model writes anyway is dropped. An output that never
// closes its reasoning is all reasoning, as in vLLM. Command R's tags work
// the same way. The text is split as it is, whitespace included.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace zl::server {

enum class ReasoningFormat { kThink, kCommandR, kHarmony };

std::optional<ReasoningFormat> reasoning_format_named(std::string_view name);
// "deepseek_r1, qwen3, ...": for --help and errors.
std::string reasoning_format_names();
// How the log describes it: "<think> ... </think>".
const char* reasoning_format_description(ReasoningFormat format);
// Whether a chat template's source teaches the syntax.
std::optional<ReasoningFormat> detect_reasoning_format(std::string_view template_source);
// Whether the syntax's markers are special tokens (kept in the text for it).
bool marked_by_special_tokens(ReasoningFormat format);
// Whether the output of a prompt rendered as `prompt` begins inside the reasoning.
bool prompt_opens_reasoning(ReasoningFormat format, std::string_view prompt);
// The text that ends the reasoning ("</think>"); empty for harmony, whose
// prompt never opens it.
std::string_view reasoning_close_tag(ReasoningFormat format);

// Splits a stream of output text into reasoning and content, piece by
// piece; bytes that may begin a tag wait for the next piece or finish().
class ReasoningSplitter {
 public:
  ReasoningSplitter(ReasoningFormat format, bool starts_inside) : format_(format), starts_inside_(starts_inside) {}

  // Appends what `text` adds to `reasoning` and `content`.
  void feed(std::string_view text, std::string& reasoning, std::string& content);
  // The output ended: what was held goes where it stands.
  void finish(std::string& reasoning, std::string& content);
  // Whether the text fed so far leaves the output inside the reasoning.
  bool in_reasoning() const;

 private:
  // kStart: before the first non-blank text, which may open the reasoning
  // (harmony: a message's header, up to <|message|>). kCall: harmony, the
  // body of a message to a recipient.
  enum class State { kStart, kReasoning, kContent, kCall };
  void feed_tagged(std::string& reasoning, std::string& content);
  void feed_harmony(std::string& reasoning, std::string& content);
  // Appends the held text up to the first of `ends` to `to` and returns the
  // end found; without one, appends all that cannot be an end's start.
  std::optional<std::string_view> take_until(std::string& to, std::initializer_list<std::string_view> ends);

  ReasoningFormat format_;
  bool starts_inside_;
  State state_ = State::kStart;
  bool in_header_ = false;  // harmony: held_ follows a <|start|>, so it is markup
  std::string held_;
};

}  // namespace zl::server
