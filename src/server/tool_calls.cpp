#include "server/tool_calls.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <random>

#include "server/json_text.h"
#include "server/output_markers.h"

namespace zl::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr std::string_view kHermesBegin = "<tool_call>";
constexpr std::string_view kHermesEnd = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralTag = "[TOOL_CALLS]";
constexpr std::string_view kGraniteTag = "<|tool_call|>";
constexpr std::string_view kFunctionarySep = ">>>";
constexpr std::string_view kFunctionaryText = "all";
constexpr std::string_view kActionBegin = "<|START_ACTION|>";
constexpr std::string_view kActionEnd = "<|END_ACTION|>";
constexpr std::string_view kResponseMarkers[] = {kResponseBegin, kResponseEnd};
constexpr std::string_view kHarmonyEnds[] = {kHarmonyEnd, kHarmonyCall, kHarmonyReturn};
constexpr std::string_view kHarmonyFunctions = "functions.";

// Calls between markers: [section_begin] (call_begin name name_end
// arguments call_end)+ [section_end].
struct TaggedSyntax {
  std::string_view section_begin, call_begin, name_end, call_end, section_end;
  std::string_view name_prefix;  // written before the name ("functions.")
  bool name_index = false;       // ":<i>" after the name
};
constexpr TaggedSyntax kDeepSeekV31{"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
                                    "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "", false};
constexpr TaggedSyntax kKimiK2{"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
                               "<|tool_call_end|>", "<|tool_calls_section_end|>", "functions.", true};

// V3 and R1: the call's type, then the name, then the arguments in a JSON code block.
constexpr TaggedSyntax kDeepSeekV3{"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>function<｜tool▁sep｜>", "\n```json\n",
                                   "\n```<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "", false};

const TaggedSyntax* tagged_syntax(ToolCallFormat format) {
  if (format == ToolCallFormat::kDeepSeekV3) return &kDeepSeekV3;
  if (format == ToolCallFormat::kDeepSeekV31) return &kDeepSeekV31;
  if (format == ToolCallFormat::kKimiK2) return &kKimiK2;
  return nullptr;
}

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// 64 bits unique in the process: a process-wide random start, then a
// counter through splitmix64.
uint64_t next_id_bits() {
  static const uint64_t seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (counter.fetch_add(1, std::memory_order_relaxed) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Mistral's templates refuse any id but 9 letters and digits (as vLLM's
// mistral parser writes them).
std::string mistral_call_id() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  uint64_t z = next_id_bits();
  std::string id(9, 'a');
  for (char& ch : id) {
    ch = kAlphabet[z % 62];
    z /= 62;
  }
  return id;
}

// "call_" + 24 hex digits.
std::string next_call_id() {
  const uint64_t z = next_id_bits();
  char buf[32];
  std::snprintf(buf, sizeof(buf), "call_%016llx%08x", static_cast<unsigned long long>(z),
                static_cast<unsigned>((z * 0x2545f4914f6cdd1dull) >> 32));
  return buf;
}

// {<name_key>: "...", <args_key>: {...}} as a call; arguments may also come as a JSON string.
std::optional<ToolCall> call_from_json(const json& j, const char* args_key, const char* name_key = "name") {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find(name_key);
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  auto args = j.find(args_key);
  if (args == j.end()) args = j.find("arguments");
  ToolCall call{next_call_id(), name->get<std::string>(), "{}"};
  if (args != j.end()) {
    if (args->is_string()) {
      json parsed = json::parse(args->get_ref<const std::string&>(), nullptr, false);
      if (!parsed.is_object()) return std::nullopt;
      call.arguments = json_text(parsed);
    } else if (args->is_object()) {
      call.arguments = json_text(*args);
    } else {
      return std::nullopt;
    }
  }
  return call;
}

ParsedOutput parse_hermes(std::string_view text) {
  ParsedOutput out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t begin = text.find(kHermesBegin, pos);
    if (begin == std::string_view::npos) break;
    const size_t inner = begin + kHermesBegin.size();
    size_t end = text.find(kHermesEnd, inner);
    const size_t next = end == std::string_view::npos ? text.size() : end + kHermesEnd.size();
    if (end == std::string_view::npos) end = text.size();  // cut off by max_tokens or a stop
    std::optional<ToolCall> call = call_from_json(json::parse(trim(text.substr(inner, end - inner)), nullptr, false), "arguments");
    out.content += text.substr(pos, (call ? begin : next) - pos);
    if (call) out.calls.push_back(std::move(*call));
    pos = next;
  }
  if (pos < text.size()) out.content += text.substr(pos);
  if (!out.calls.empty()) out.content = std::string(trim(out.content));
  return out;
}

// The name as written, without the syntax's prefix and index:
// "functions.get_weather:0" -> "get_weather".
std::string_view call_name(const TaggedSyntax& s, std::string_view name) {
  name = trim(name);
  if (name.starts_with(s.name_prefix)) name.remove_prefix(s.name_prefix.size());
  if (const size_t colon = name.rfind(':'); s.name_index && colon != std::string_view::npos) name = name.substr(0, colon);
  return name;
}

// Text before the section is content, and so is text after it; a call that
// does not parse leaves the whole output content.
ParsedOutput parse_tagged(const TaggedSyntax& s, std::string_view text) {
  const size_t section = text.find(s.section_begin);
  if (section == std::string_view::npos) return ParsedOutput{std::string(text), {}};
  ParsedOutput out{std::string(trim(text.substr(0, section))), {}};
  size_t pos = section + s.section_begin.size();
  for (;;) {
    const size_t begin = text.find(s.call_begin, pos);
    const size_t section_end = text.find(s.section_end, pos);
    if (begin == std::string_view::npos || section_end < begin) {
      pos = section_end == std::string_view::npos ? text.size() : section_end + s.section_end.size();
      break;
    }
    const size_t name_at = begin + s.call_begin.size();
    const size_t name_end = text.find(s.name_end, name_at);
    if (name_end == std::string_view::npos) return ParsedOutput{std::string(text), {}};
    const size_t args_at = name_end + s.name_end.size();
    const size_t call_end = std::min(text.find(s.call_end, args_at), text.size());  // cut off: to the end
    const json args = json::parse(trim(text.substr(args_at, call_end - args_at)), nullptr, false);
    const std::string_view name = call_name(s, text.substr(name_at, name_end - name_at));
    if (name.empty() || !args.is_object()) return ParsedOutput{std::string(text), {}};
    out.calls.push_back({next_call_id(), std::string(name), json_text(args)});
    pos = std::min(call_end + s.call_end.size(), text.size());
  }
  if (out.calls.empty()) return ParsedOutput{std::string(text), {}};
  const std::string_view tail = trim(text.substr(pos));
  if (!tail.empty()) out.content += (out.content.empty() ? "" : "\n") + std::string(tail);
  return out;
}

// Mistral Small 3.2's calls: ([TOOL_CALLS]name[CALL_ID]id[ARGS]{...})+, the
// [CALL_ID] part optional; the whole output or none of it is calls.
ParsedOutput parse_mistral_args(std::string_view text) {
  constexpr std::string_view kArgs = "[ARGS]", kCallId = "[CALL_ID]";
  const std::string_view body = trim(text);
  ParsedOutput out;
  for (size_t pos = 0; pos < body.size();) {
    if (!body.substr(pos).starts_with(kMistralTag)) return ParsedOutput{std::string(text), {}};
    const size_t name_at = pos + kMistralTag.size();
    const size_t args_marker = body.find(kArgs, name_at);
    if (args_marker == std::string_view::npos) return ParsedOutput{std::string(text), {}};
    const size_t next = std::min(body.find(kMistralTag, args_marker), body.size());
    std::string_view name = body.substr(name_at, args_marker - name_at);
    name = trim(name.substr(0, name.find(kCallId)));
    const json args = json::parse(trim(body.substr(args_marker + kArgs.size(), next - args_marker - kArgs.size())),
                                  nullptr, false);
    if (name.empty() || !args.is_object()) return ParsedOutput{std::string(text), {}};
    out.calls.push_back({"", std::string(name), json_text(args)});
    pos = next;
  }
  return out;
}

// The whole output is calls (JSON objects separated by ';' or whitespace,
// llama3_json; or one JSON array, mistral), or it is all content.
ParsedOutput parse_whole(std::string_view text, std::string_view tag, bool array) {
  std::string_view body = trim(text);
  if (body.starts_with(tag)) body = trim(body.substr(tag.size()));
  ParsedOutput out;
  if (body.empty() || body.front() != (array ? '[' : '{')) return ParsedOutput{std::string(text), {}};
  std::vector<json> items;
  if (array) {
    json list = json::parse(body, nullptr, false);
    if (list.is_array()) items.assign(list.begin(), list.end());
  } else {
    size_t start = 0;
    while (start < body.size()) {
      // The objects' ends: try each '}' until the text before it parses.
      size_t end = body.find('}', start);
      json item;
      for (; end != std::string_view::npos; end = body.find('}', end + 1)) {
        item = json::parse(body.substr(start, end + 1 - start), nullptr, false);
        if (!item.is_discarded()) break;
      }
      if (end == std::string_view::npos) return ParsedOutput{std::string(text), {}};
      items.push_back(std::move(item));
      start = body.find_first_not_of("; \t\r\n", end + 1);
      if (start == std::string_view::npos) break;
    }
  }
  if (items.empty()) return ParsedOutput{std::string(text), {}};
  for (const json& item : items) {
    std::optional<ToolCall> call = call_from_json(item, array ? "arguments" : "parameters");
    if (!call) return ParsedOutput{std::string(text), {}};
    out.calls.push_back(std::move(*call));
  }
  return out;
}

bool is_function_name(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.') return false;
  return true;
}

// Functionary v3.2: messages "recipient\nbody" joined by ">>>" (the first
// message's ">>>" ends the prompt). "all" is text; a name with a JSON object
// body is a call; anything else leaves the whole output content.
ParsedOutput parse_functionary(std::string_view text) {
  std::string_view rest = text;
  if (rest.starts_with(kFunctionarySep)) rest.remove_prefix(kFunctionarySep.size());
  ParsedOutput out;
  for (;;) {
    const size_t next = rest.find(kFunctionarySep);
    const std::string_view message = rest.substr(0, next);
    const size_t newline = message.find('\n');
    const std::string_view recipient = message.substr(0, newline);
    if (recipient == kFunctionaryText) {
      if (newline != std::string_view::npos) out.content += message.substr(newline + 1);
    } else {
      if (newline == std::string_view::npos || !is_function_name(recipient)) return ParsedOutput{std::string(text), {}};
      const json args = json::parse(trim(message.substr(newline + 1)), nullptr, false);
      if (!args.is_object()) return ParsedOutput{std::string(text), {}};
      out.calls.push_back({next_call_id(), std::string(recipient), json_text(args)});
    }
    if (next == std::string_view::npos) break;
    rest.remove_prefix(next + kFunctionarySep.size());
  }
  if (!out.calls.empty()) out.content = std::string(trim(out.content));
  return out;
}

// Removes Command R7B's response markers from text that is content.
std::string without_response_markers(std::string_view text) {
  std::string out(text);
  for (std::string_view marker : kResponseMarkers)
    for (size_t at = out.find(marker); at != std::string::npos; at = out.find(marker, at)) out.erase(at, marker.size());
  return out;
}

// Command R7B: text in response markers, calls as one JSON array of
// {"tool_call_id", "tool_name", "parameters"} between action markers.
ParsedOutput parse_command_r7b(std::string_view text) {
  const size_t action = text.find(kActionBegin);
  if (action == std::string_view::npos) return ParsedOutput{without_response_markers(text), {}};
  const size_t body_at = action + kActionBegin.size();
  const size_t end = std::min(text.find(kActionEnd, body_at), text.size());  // cut off: to the end
  const json list = json::parse(trim(text.substr(body_at, end - body_at)), nullptr, false);
  if (!list.is_array() || list.empty()) return ParsedOutput{std::string(text), {}};
  ParsedOutput out;
  for (const json& item : list) {
    std::optional<ToolCall> call = call_from_json(item, "parameters", "tool_name");
    if (!call) return ParsedOutput{std::string(text), {}};
    out.calls.push_back(std::move(*call));
  }
  const std::string_view after = end < text.size() ? text.substr(end + kActionEnd.size()) : std::string_view{};
  out.content = std::string(trim(without_response_markers(std::string(text.substr(0, action)) + std::string(after))));
  return out;
}

// gpt-oss: messages [<|start|>]header<|message|>body<|end|> (or <|call|>,
// <|return|>, or the output's end). A message with a functions.* recipient
// is a call whose body is the arguments; others' bodies are text, and text
// outside any message stays as it is.
ParsedOutput parse_harmony(std::string_view text) {
  ParsedOutput out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t next = text.find(kHarmonyStart, pos + (text.substr(pos).starts_with(kHarmonyStart) ? 1 : 0));
    if (next == std::string_view::npos) next = text.size();
    std::string_view segment = text.substr(pos, next - pos);
    pos = next;
    if (segment.starts_with(kHarmonyStart)) segment.remove_prefix(kHarmonyStart.size());
    const size_t message = segment.find(kHarmonyMessage);
    if (message == std::string_view::npos) {
      out.content += segment;
      continue;
    }
    std::string_view body = segment.substr(message + kHarmonyMessage.size());
    size_t end = body.size();
    for (std::string_view marker : kHarmonyEnds) end = std::min(end, body.find(marker));
    body = body.substr(0, end);
    const std::string_view recipient = harmony_recipient(segment.substr(0, message));
    if (recipient.empty()) {
      out.content += body;
      continue;
    }
    const json args = json::parse(trim(body), nullptr, false);
    std::string_view name = recipient;
    if (name.starts_with(kHarmonyFunctions)) name.remove_prefix(kHarmonyFunctions.size());
    if (name.empty() || !args.is_object()) return ParsedOutput{std::string(text), {}};
    out.calls.push_back({next_call_id(), std::string(name), json_text(args)});
  }
  if (!out.calls.empty()) out.content = std::string(trim(out.content));
  return out;
}

std::string quoted(const std::string& s) { return json_text(json(s)); }

ojson tag_for(ToolCallFormat format, const ojson& tool) {
  const ojson& function = tool.at("function");
  const std::string name = function.at("name").get<std::string>();
  const auto params = function.find("parameters");
  ojson schema = params != function.end() && params->is_object() ? *params : ojson{{"type", "object"}};
  std::string begin, end;
  switch (format) {
    case ToolCallFormat::kHermes:
      begin = "<tool_call>\n{\"name\": " + quoted(name) + ", \"arguments\": ";
      end = "}\n</tool_call>";
      break;
    case ToolCallFormat::kLlama3Json:
      begin = "{\"name\": " + quoted(name) + ", \"parameters\": ";
      end = "}";
      break;
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kGranite:
      begin = "{\"name\": " + quoted(name) + ", \"arguments\": ";
      end = "}";
      break;
    case ToolCallFormat::kFunctionaryV32:  // the prompt ends with ">>>"; calls are joined by it
      begin = name + "\n";
      break;
    case ToolCallFormat::kCommandR7b:
      begin = "{\"tool_call_id\": \"0\", \"tool_name\": " + quoted(name) + ", \"parameters\": ";
      end = "}";
      break;
    case ToolCallFormat::kHarmony:  // the prompt ends with "<|start|>assistant"
      begin = "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>";
      end = "<|call|>";
      break;
    case ToolCallFormat::kDeepSeekV3:
    case ToolCallFormat::kDeepSeekV31:
    case ToolCallFormat::kKimiK2: {
      const TaggedSyntax& s = *tagged_syntax(format);
      begin = std::string(s.call_begin) + std::string(s.name_prefix) + name + (s.name_index ? ":0" : "") +
              std::string(s.name_end);
      end = s.call_end;
      break;
    }
  }
  return ojson{{"type", "tag"},
               {"begin", begin},
               {"content", {{"type", "json_schema"}, {"json_schema", schema}}},
               {"end", end}};
}

}  // namespace

constexpr ToolCallFormat kFormats[] = {
    ToolCallFormat::kHermes,      ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral,
    ToolCallFormat::kGranite,     ToolCallFormat::kDeepSeekV31, ToolCallFormat::kKimiK2,
    ToolCallFormat::kFunctionaryV32, ToolCallFormat::kCommandR7b, ToolCallFormat::kHarmony,
    ToolCallFormat::kDeepSeekV3};

std::optional<ToolCallFormat> tool_call_format_named(std::string_view name) {
  for (ToolCallFormat format : kFormats)
    if (name == tool_call_format_name(format)) return format;
  return std::nullopt;
}

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3_json";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kGranite: return "granite";
    case ToolCallFormat::kDeepSeekV31: return "deepseek_v31";
    case ToolCallFormat::kKimiK2: return "kimi_k2";
    case ToolCallFormat::kFunctionaryV32: return "functionary_v3_2";
    case ToolCallFormat::kCommandR7b: return "command_r7b";
    case ToolCallFormat::kHarmony: return "openai";
    case ToolCallFormat::kDeepSeekV3: return "deepseek_v3";
  }
  return "hermes";
}

std::string tool_call_format_names() {
  std::string names;
  for (ToolCallFormat format : kFormats) names += (names.empty() ? "" : ", ") + std::string(tool_call_format_name(format));
  return names;
}

bool marked_by_special_tokens(ToolCallFormat format) {
  return format != ToolCallFormat::kHermes && format != ToolCallFormat::kLlama3Json &&
         format != ToolCallFormat::kFunctionaryV32;
}

std::optional<ToolCallFormat> detect_tool_call_format(std::string_view source) {
  if (source.find(">>>all") != std::string_view::npos) return ToolCallFormat::kFunctionaryV32;
  if (source.find(kActionBegin) != std::string_view::npos) return ToolCallFormat::kCommandR7b;
  if (source.find("<|channel|>commentary") != std::string_view::npos) return ToolCallFormat::kHarmony;
  if (source.find("<tool_call>") != std::string_view::npos) return ToolCallFormat::kHermes;
  if (source.find("[TOOL_CALLS][") != std::string_view::npos || source.find("[ARGS]") != std::string_view::npos)
    return ToolCallFormat::kMistral;
  if (source.find(kGraniteTag) != std::string_view::npos) return ToolCallFormat::kGranite;
  if (source.find(kDeepSeekV31.call_begin) != std::string_view::npos)
    return source.find("```json") != std::string_view::npos ? ToolCallFormat::kDeepSeekV3 : ToolCallFormat::kDeepSeekV31;
  if (source.find(kKimiK2.call_begin) != std::string_view::npos) return ToolCallFormat::kKimiK2;
  if (source.find("\"parameters\": ") != std::string_view::npos &&
      source.find("<|start_header_id|>") != std::string_view::npos)
    return ToolCallFormat::kLlama3Json;
  return std::nullopt;
}

ParsedOutput parse_tool_calls(ToolCallFormat format, std::string_view text) {
  switch (format) {
    case ToolCallFormat::kHermes: return parse_hermes(text);
    case ToolCallFormat::kLlama3Json: return parse_whole(text, kPythonTag, false);
    case ToolCallFormat::kMistral: {
      // Nemo's JSON array, or Small 3.2's [TOOL_CALLS]name[ARGS]{...}.
      std::string_view body = trim(text);
      if (body.starts_with(kMistralTag)) body = trim(body.substr(kMistralTag.size()));
      ParsedOutput out = body.starts_with("[") || !trim(text).starts_with(kMistralTag) ? parse_whole(text, kMistralTag, true)
                                                                                      : parse_mistral_args(text);
      for (ToolCall& call : out.calls) call.id = mistral_call_id();
      return out;
    }
    case ToolCallFormat::kGranite: return parse_whole(text, kGraniteTag, true);
    case ToolCallFormat::kDeepSeekV3:
    case ToolCallFormat::kDeepSeekV31:
    case ToolCallFormat::kKimiK2: return parse_tagged(*tagged_syntax(format), text);
    case ToolCallFormat::kFunctionaryV32: return parse_functionary(text);
    case ToolCallFormat::kCommandR7b: return parse_command_r7b(text);
    case ToolCallFormat::kHarmony: return parse_harmony(text);
  }
  return ParsedOutput{std::string(text), {}};
}

size_t streamable_prefix(ToolCallFormat format, std::string_view text) {
  if (format == ToolCallFormat::kHarmony) {  // text until a message's markup begins
    const size_t begin = text.find("<|");
    return begin != std::string_view::npos ? begin : text.size() - (text.ends_with('<') ? 1 : 0);
  }
  if (format == ToolCallFormat::kCommandR7b) {  // text until the action; a marker cut at the end waits
    if (const size_t begin = text.find(kActionBegin); begin != std::string_view::npos) return begin;
    size_t held = partial_marker_at_end(text, kActionBegin);
    for (std::string_view marker : kResponseMarkers) held = std::max(held, partial_marker_at_end(text, marker));
    return text.size() - held;
  }
  if (format == ToolCallFormat::kFunctionaryV32) {  // text (after an "all" line) until the next message
    const size_t begin = text.find(kFunctionarySep);
    return begin != std::string_view::npos ? begin : text.size() - partial_marker_at_end(text, kFunctionarySep);
  }
  if (format == ToolCallFormat::kHermes || tagged_syntax(format)) {
    // Content until the first call (or section) begins.
    const std::string_view marker = format == ToolCallFormat::kHermes ? kHermesBegin : tagged_syntax(format)->section_begin;
    const size_t begin = text.find(marker);
    if (begin != std::string_view::npos) return begin;
    return text.size() - partial_marker_at_end(text, marker);
  }
  // Calls are the whole output: hold it while it may still be one.
  const std::string_view tag = format == ToolCallFormat::kMistral ? kMistralTag
                               : format == ToolCallFormat::kGranite ? kGraniteTag
                                                                    : kPythonTag;
  const char open = format == ToolCallFormat::kLlama3Json ? '{' : '[';
  const std::string_view body = trim(text);
  if (body.empty() || body.front() == open || tag.starts_with(body.substr(0, tag.size())) || body.starts_with(tag))
    return 0;
  return text.size();
}

std::string tool_call_structural_tag(ToolCallFormat format, const ojson& tools, const std::string& only) {
  ojson tags = ojson::array();
  for (const ojson& tool : tools)
    if (only.empty() || tool.at("function").at("name") == only) tags.push_back(tag_for(format, tool));
  const TaggedSyntax* tagged = tagged_syntax(format);
  const char* separator = format == ToolCallFormat::kHermes           ? "\n"
                          : format == ToolCallFormat::kLlama3Json     ? "; "
                          : format == ToolCallFormat::kFunctionaryV32 ? ">>>"
                          : format == ToolCallFormat::kHarmony        ? "<|start|>assistant"
                          : tagged                                     ? ""
                                                                       : ", ";
  ojson body{{"type", "tags_with_separator"}, {"tags", tags}, {"separator", separator},
             {"at_least_one", true}, {"stop_after_first", false}};
  // Around the calls: a JSON array (mistral, granite), or a section's markers.
  std::string open, close;
  if (format == ToolCallFormat::kMistral) open = "[", close = "]";
  if (format == ToolCallFormat::kGranite) open = std::string(kGraniteTag) + "[", close = "]";
  if (format == ToolCallFormat::kCommandR7b) open = std::string(kActionBegin) + "[", close = "]" + std::string(kActionEnd);
  if (tagged) open = tagged->section_begin, close = tagged->section_end;
  if (!open.empty()) {
    body = ojson{{"type", "sequence"},
                 {"elements", ojson::array({ojson{{"type", "const_string"}, {"value", open}}, body,
                                            ojson{{"type", "const_string"}, {"value", close}}})}};
  }
  return ojson{{"type", "structural_tag"}, {"format", body}}.dump();
}

std::string ToolCallStream::feed(std::string_view text) {
  held_ += text;
  if (format_ == ToolCallFormat::kFunctionaryV32 && lead_ != Lead::kContent) {
    // The first line names the first message's recipient: "all" is text
    // (the line itself is markup), any other a call, held to the end.
    if (lead_ == Lead::kCalls) return {};
    const size_t newline = held_.find('\n');
    if (newline == std::string::npos) return {};
    lead_ = std::string_view(held_).substr(0, newline) == kFunctionaryText ? Lead::kContent : Lead::kCalls;
    if (lead_ == Lead::kCalls) return {};
    held_.erase(0, newline + 1);
  }
  const size_t n = streamable_prefix(format_, held_);
  std::string out = held_.substr(0, n);
  held_.erase(0, n);
  if (format_ == ToolCallFormat::kFunctionaryV32 && held_.starts_with(kFunctionarySep)) lead_ = Lead::kCalls;
  if (format_ == ToolCallFormat::kCommandR7b) out = without_response_markers(out);
  return out;
}

ParsedOutput ToolCallStream::finish(std::string_view last) {
  held_ += last;
  // functionary_v3_2 in text with no ">>>" since: the rest is that text.
  if (format_ == ToolCallFormat::kFunctionaryV32 && lead_ == Lead::kContent) held_.insert(0, "all\n");
  ParsedOutput out = parse_tool_calls(format_, held_);
  held_.clear();
  return out;
}

}  // namespace zl::server
