// Tool calls in a chat model's output, in the syntax its chat template
// teaches it (vLLM's --tool-call-parser names):
//   hermes       <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
//                (Qwen 2.5 / 3, QwQ, Hermes 2 Pro / 3)
//   llama3_json  {"name": ..., "parameters": {...}}, the whole output (Llama 3.1-3.3)
//   mistral      [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] (Mistral Nemo), or
//                [TOOL_CALLS]name[ARGS]{...} per call (Mistral Small 3.2; its
//                required grammar still writes the array, which parses too)
//   granite      <|tool_call|>[{"name": ..., "arguments": {...}}, ...] (Granite 3.x)
//   deepseek_v31 <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>name<｜tool▁sep｜>{...}
//                <｜tool▁call▁end｜>...<｜tool▁calls▁end｜> (DeepSeek V3.1)
//   deepseek_v3  the same markers, each call function<｜tool▁sep｜>name\n```json\n{...}\n```
//                (DeepSeek V3, R1 and its distills)
//   kimi_k2      <|tool_calls_section_begin|><|tool_call_begin|>functions.name:0
//                <|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>
//   functionary_v3_2  messages "recipient\nbody" joined by ">>>" (the prompt
//                ends with ">>>"): "all\n" text is content, "name\n{...}" a call
//                (Functionary v3.2, llama.cpp's name)
//   command_r7b  <|START_ACTION|>[{"tool_call_id": "0", "tool_name": ..., "parameters": {...}}]
//                <|END_ACTION|>; text comes as <|START_RESPONSE|>...<|END_RESPONSE|>
//   openai       gpt-oss's harmony messages: <|start|>assistant to=functions.name
//                <|channel|>commentary json<|message|>{...}<|call|> (the recipient
//                may also follow the channel); other channels are text (the
//                reasoning parser takes the analysis channel first)
// The markers of hermes, llama3_json and functionary_v3_2 are text; the
// others' are special tokens, which a request keeps in its text for the
// parser (Request::skip_special_tokens).
// parse_tool_calls() turns a finished output into content and calls;
// ToolCallStream says how much of a stream may go out as content before its
// end is known; tool_call_structural_tag() is the grammar (an xgrammar
// structural tag) that, for tool_choice "required" or a named function,
// makes the output well-formed calls.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zl::server {

enum class ToolCallFormat {
  kHermes, kLlama3Json, kMistral, kGranite, kDeepSeekV31, kKimiK2, kFunctionaryV32, kCommandR7b, kHarmony,
  kDeepSeekV3
};

std::optional<ToolCallFormat> tool_call_format_named(std::string_view name);
const char* tool_call_format_name(ToolCallFormat format);
// "hermes, llama3_json, ...": for --help and errors.
std::string tool_call_format_names();
// Whether the syntax's markers are special tokens (kept in the text for it).
bool marked_by_special_tokens(ToolCallFormat format);
// The format a chat template's source renders assistant tool calls in, if any.
std::optional<ToolCallFormat> detect_tool_call_format(std::string_view template_source);

struct ToolCall {
  std::string id;         // "call_" and 24 hex digits (mistral: 9 letters and digits), unique in the process
  std::string name;
  std::string arguments;  // the arguments object as JSON text
};

struct ParsedOutput {
  std::string content;    // the text outside the calls (trimmed when there are calls)
  std::vector<ToolCall> calls;
};

// A call that does not parse stays in the content: nothing is dropped.
ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text);

// How many leading bytes of a stream's text so far cannot belong to a call
// and may go out as content now (the rest waits for more text or the end).
// Stateless: functionary_v3_2's leading recipient line needs ToolCallStream.
size_t streamable_prefix(ToolCallFormat format, std::string_view text);

// One output's text as it streams: feed() gives the content that may go out
// now; finish() takes the last text and parses what was held back with it
// into content and calls.
class ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format) : format_(format) {}
  std::string feed(std::string_view text);
  ParsedOutput finish(std::string_view last);

 private:
  // functionary_v3_2: before the first recipient line is whole; after an
  // "all" line (text streams until ">>>"); after a call's (all is held).
  enum class Lead { kUnread, kContent, kCalls };
  ToolCallFormat format_;
  Lead lead_ = Lead::kUnread;
  std::string held_;
};

// The structural tag (xgrammar's JSON) over `tools` (OpenAI's list of
// {"type": "function", "function": {"name", "parameters"}}) that makes the
// output one or more calls and nothing else (tool_choice "required"), each
// call's arguments valid under its function's parameters. `only`
// (non-empty) limits the calls to that function (a named tool_choice).
std::string tool_call_structural_tag(ToolCallFormat format, const nlohmann::ordered_json& tools,
                                     const std::string& only);

}  // namespace zl::server
