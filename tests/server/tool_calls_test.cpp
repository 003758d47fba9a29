// Tool-call parsing (server/tool_calls.h): each syntax's calls come out with
// their names and arguments, text around them stays content, malformed calls
// are kept as content (never dropped), and streaming holds back exactly the
// text that may still become a call.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace zl::server {
namespace {

using nlohmann::json;

void expect_call(const ToolCall& call, const std::string& name, const json& arguments, bool openai_id = true) {
  EXPECT_EQ(call.name, name);
  EXPECT_EQ(json::parse(call.arguments), arguments) << call.arguments;
  if (!openai_id) return;
  EXPECT_EQ(call.id.rfind("call_", 0), 0u);
  EXPECT_EQ(call.id.size(), 29u);
}

// The two calls most cases write: get_weather for `city`, then get_time with no arguments.
void expect_weather_then_time(const ParsedOutput& out, const std::string& city) {
  ASSERT_EQ(out.calls.size(), 2u);
  expect_call(out.calls[0], "get_weather", json{{"city", city}});
  expect_call(out.calls[1], "get_time", json::object());
}

TEST(ToolCallsTest, HermesCallsAndTheTextAround) {
  const ParsedOutput out = parse_tool_calls(ToolCallFormat::kHermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call>");
  EXPECT_EQ(out.content, "Let me check.");
  ASSERT_EQ(out.calls.size(), 2u);
  expect_call(out.calls[0], "get_weather", json{{"city", "Paris"}});
  expect_call(out.calls[1], "get_time", json{{"tz", "CET"}});  // arguments sent as JSON text
  EXPECT_NE(out.calls[0].id, out.calls[1].id);
}

TEST(ToolCallsTest, HermesCallCutOffAtTheEndStillParses) {
  const ParsedOutput out =
      parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n");
  ASSERT_EQ(out.calls.size(), 1u);
  expect_call(out.calls[0], "f", json::object());
  EXPECT_EQ(out.content, "");
}

TEST(ToolCallsTest, MalformedCallsStayContent) {
  for (const char* text : {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>",
                           "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>[1, 2]</tool_call>",
                           "<tool_call>{\"name\": \"\", \"arguments\": {}}</tool_call>"}) {
    const ParsedOutput out = parse_tool_calls(ToolCallFormat::kHermes, text);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
  }
  const std::string plain = "No tools needed: {\"name\": 1}";
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kLlama3Json, plain).content, plain);
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kLlama3Json, "{\"name\": \"f\", \"parameters\": 3}").calls.empty());
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kMistral, "[{\"name\": \"f\"}, 7]").calls.empty());
}

TEST(ToolCallsTest, Llama3JsonObjectsAndPythonTag) {
  ParsedOutput out = parse_tool_calls(ToolCallFormat::kLlama3Json,
                                      " {\"name\": \"search\", \"parameters\": {\"q\": \"a}b\", \"n\": {\"k\": 2}}}");
  ASSERT_EQ(out.calls.size(), 1u);
  expect_call(out.calls[0], "search", json{{"q", "a}b"}, {"n", {{"k", 2}}}});
  out = parse_tool_calls(ToolCallFormat::kLlama3Json,
                         "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"x\": 1}}");
  ASSERT_EQ(out.calls.size(), 2u);
  expect_call(out.calls[1], "b", json{{"x", 1}});
}

TEST(ToolCallsTest, MistralArray) {
  const ParsedOutput out = parse_tool_calls(
      ToolCallFormat::kMistral, "[{\"name\": \"a\", \"arguments\": {\"x\": [1]}}, {\"name\": \"b\", \"arguments\": {}}]");
  ASSERT_EQ(out.calls.size(), 2u);
  expect_call(out.calls[0], "a", json{{"x", {1}}}, false);
  expect_call(out.calls[1], "b", json::object(), false);
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kMistral, "[TOOL_CALLS][{\"name\": \"c\", \"arguments\": {}}]").calls.size(), 1u);
  // Mistral's templates take only 9 letters and digits as an id.
  for (const ToolCall& call : out.calls) {
    EXPECT_EQ(call.id.size(), 9u) << call.id;
    EXPECT_TRUE(std::all_of(call.id.begin(), call.id.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)); }));
  }
  EXPECT_NE(out.calls[0].id, out.calls[1].id);
  // Small 3.2's form, a call id or not.
  const ParsedOutput small = parse_tool_calls(
      ToolCallFormat::kMistral, "[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]{\"city\": \"Paris\"}"
                                "[TOOL_CALLS]get_time[ARGS]{}");
  ASSERT_EQ(small.calls.size(), 2u);
  expect_call(small.calls[0], "get_weather", json{{"city", "Paris"}}, false);
  expect_call(small.calls[1], "get_time", json::object(), false);
  EXPECT_EQ(small.calls[1].id.size(), 9u);
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kMistral, "[TOOL_CALLS]f[ARGS]{\"a\":").calls.empty());
}

TEST(ToolCallsTest, GraniteArray) {
  const ParsedOutput out = parse_tool_calls(
      ToolCallFormat::kGranite, "<|tool_call|>[{\"name\": \"a\", \"arguments\": {\"x\": 1}}]");
  ASSERT_EQ(out.calls.size(), 1u);
  expect_call(out.calls[0], "a", json{{"x", 1}});
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::kGranite, "It is sunny.").calls.empty());
}

TEST(ToolCallsTest, DeepSeekAndKimiSections) {
  ParsedOutput out = parse_tool_calls(ToolCallFormat::kDeepSeekV31,
      "Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}"
      "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  EXPECT_EQ(out.content, "Checking.");
  ASSERT_EQ(out.calls.size(), 2u);
  expect_call(out.calls[0], "get_weather", json{{"city", "Paris"}});
  expect_call(out.calls[1], "get_time", json::object());
  out = parse_tool_calls(ToolCallFormat::kKimiK2,
      "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
      "{\"city\": \"Rome\"}<|tool_call_end|><|tool_calls_section_end|>");
  EXPECT_EQ(out.content, "");
  ASSERT_EQ(out.calls.size(), 1u);
  expect_call(out.calls[0], "get_weather", json{{"city", "Rome"}});
  // Cut off by max_tokens: the last call still parses if its arguments do.
  out = parse_tool_calls(ToolCallFormat::kDeepSeekV31,
                         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": 1}");
  ASSERT_EQ(out.calls.size(), 1u);
  // A call that does not parse leaves everything content.
  const std::string bad = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": <｜tool▁call▁end｜>";
  out = parse_tool_calls(ToolCallFormat::kDeepSeekV31, bad);
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(out.content, bad);
  // DeepSeek V3 / R1: the type, the name, then the arguments in a JSON code block.
  out = parse_tool_calls(ToolCallFormat::kDeepSeekV3,
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\"}\n```"
      "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>");
  expect_weather_then_time(out, "Oslo");
  EXPECT_EQ(detect_tool_call_format("'<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + name + '```json'"),
            ToolCallFormat::kDeepSeekV3);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kKimiK2, "Sure.<|tool_calls_sec"), 5u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kDeepSeekV31, "Sure."), 5u);
}

TEST(ToolCallsTest, FunctionaryMessages) {
  // The prompt ends with ">>>": the output's first line is a recipient.
  ParsedOutput out = parse_tool_calls(ToolCallFormat::kFunctionaryV32,
                                      "get_weather\n{\"city\": \"Paris\"}>>>get_time\n{}>>>all\nDone.");
  EXPECT_EQ(out.content, "Done.");
  expect_weather_then_time(out, "Paris");
  out = parse_tool_calls(ToolCallFormat::kFunctionaryV32, "all\nJust text.");
  EXPECT_EQ(out.content, "Just text.");
  EXPECT_TRUE(out.calls.empty());
  for (std::string_view bad : {"Hello there", "get_weather\n{\"city\": ", "two words\n{}"}) {
    out = parse_tool_calls(ToolCallFormat::kFunctionaryV32, bad);
    EXPECT_TRUE(out.calls.empty());
    EXPECT_EQ(out.content, bad);
  }
}

TEST(ToolCallsTest, CommandR7bActions) {
  ParsedOutput out = parse_tool_calls(ToolCallFormat::kCommandR7b,
      "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": "
      "{\"city\": \"Rome\"}},\n    {\"tool_call_id\": \"1\", \"tool_name\": \"get_time\", \"parameters\": {}}\n]"
      "<|END_ACTION|>");
  EXPECT_EQ(out.content, "");
  expect_weather_then_time(out, "Rome");
  out = parse_tool_calls(ToolCallFormat::kCommandR7b, "<|START_RESPONSE|>It is sunny.<|END_RESPONSE|>");
  EXPECT_EQ(out.content, "It is sunny.");
  EXPECT_TRUE(out.calls.empty());
  const std::string bad = "<|START_ACTION|>[{\"tool_name\": 3}]<|END_ACTION|>";
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kCommandR7b, bad).content, bad);
}

TEST(ToolCallsTest, HarmonyMessagesToFunctions) {
  // The recipient before the channel (as the template renders a call, and
  // the reasoning splitter passes it on after text) or after it (as gpt-oss
  // writes one, here with the preamble message unsplit).
  for (std::string_view text :
       {"Checking.<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Oslo\"}<|call|>",
        "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary "
        "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}<|call|>"}) {
    ParsedOutput out = parse_tool_calls(ToolCallFormat::kHarmony, text);
    EXPECT_EQ(out.content, "Checking.");
    ASSERT_EQ(out.calls.size(), 1u) << text;
    expect_call(out.calls[0], "get_weather", json{{"city", "Oslo"}});
  }
  // Unsplit channels are text; a call whose body is not an object leaves it all content.
  ParsedOutput out = parse_tool_calls(ToolCallFormat::kHarmony, "<|channel|>final<|message|>Hi.<|return|>");
  EXPECT_EQ(out.content, "Hi.");
  const std::string bad = "<|channel|>commentary to=functions.f<|message|>[1]<|call|>";
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kHarmony, bad).content, bad);
}

// Text through a ToolCallStream in pieces of `step` bytes: (streamed content, final parse).
std::pair<std::string, ParsedOutput> stream(ToolCallFormat format, std::string_view text, size_t step) {
  ToolCallStream s(format);
  std::string streamed;
  size_t i = 0;
  for (; i + step < text.size(); i += step) streamed += s.feed(text.substr(i, step));
  return {streamed, s.finish(text.substr(i))};
}

TEST(ToolCallsTest, StreamsGiveTheWholeParse) {
  const std::pair<ToolCallFormat, std::string_view> cases[] = {
      {ToolCallFormat::kFunctionaryV32, "all\nLet me check.>>>get_time\n{\"tz\": \"UTC\"}"},
      {ToolCallFormat::kFunctionaryV32, "get_time\n{}>>>all\nx"},
      {ToolCallFormat::kFunctionaryV32, "all\nonly text, a > b >> c"},
      {ToolCallFormat::kCommandR7b, "<|START_RESPONSE|>Sunny.<|END_RESPONSE|>"},
      {ToolCallFormat::kCommandR7b, "<|START_ACTION|>[{\"tool_name\": \"f\", \"parameters\": {}}]<|END_ACTION|>"},
      {ToolCallFormat::kHarmony, "Text.<|start|>assistant to=functions.f<|channel|>commentary<|message|>{}<|call|>"},
      {ToolCallFormat::kHermes, "Sure. <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"},
  };
  for (const auto& [format, text] : cases) {
    const ParsedOutput whole = parse_tool_calls(format, text);
    for (size_t step : {size_t{1}, size_t{3}, size_t{7}, text.size()}) {
      SCOPED_TRACE(testing::Message() << text << ", pieces of " << step);
      const auto [streamed, last] = stream(format, text, step);
      EXPECT_EQ(last.calls.size(), whole.calls.size());
      for (size_t k = 0; k < std::min(last.calls.size(), whole.calls.size()); ++k) {
        EXPECT_EQ(last.calls[k].name, whole.calls[k].name);
        EXPECT_EQ(last.calls[k].arguments, whole.calls[k].arguments);
      }
      // What streamed, then the last parse's content, is the whole parse's
      // content, up to the blanks that a parse with calls trims.
      std::string joined = streamed + last.content;
      joined.erase(std::remove(joined.begin(), joined.end(), ' '), joined.end());
      std::string expected = whole.content;
      expected.erase(std::remove(expected.begin(), expected.end(), ' '), expected.end());
      EXPECT_EQ(joined, expected);
    }
  }
}

TEST(ToolCallsTest, StreamingHoldsOnlyWhatMayBeACall) {
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kHermes, "Hello there"), 11u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kHermes, "Hello <tool"), 6u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kHermes, "Hi <tool_call>\n{\"na"), 3u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kHermes, "a < b"), 5u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kLlama3Json, "  {\"na"), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kLlama3Json, ""), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kLlama3Json, "<|python"), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kLlama3Json, "Sure, "), 6u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kMistral, "[{"), 0u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kMistral, "The answer"), 10u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kHarmony, "Final text<|start|>assistant to="), 10u);
  EXPECT_EQ(streamable_prefix(ToolCallFormat::kCommandR7b, "Sunny<|START_ACT"), 5u);
  // functionary_v3_2: the "all" line is markup; text streams until ">>>".
  ToolCallStream functionary(ToolCallFormat::kFunctionaryV32);
  EXPECT_EQ(functionary.feed("al"), "");
  EXPECT_EQ(functionary.feed("l\nHello"), "Hello");
  EXPECT_EQ(functionary.feed(" there>"), " there");
  EXPECT_EQ(functionary.feed(">>f\n{}"), "");
  EXPECT_EQ(functionary.finish("").calls.size(), 1u);
}

TEST(ToolCallsTest, NamesAndDetection) {
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral,
                           ToolCallFormat::kGranite, ToolCallFormat::kDeepSeekV31, ToolCallFormat::kKimiK2,
                           ToolCallFormat::kFunctionaryV32, ToolCallFormat::kCommandR7b, ToolCallFormat::kHarmony,
                           ToolCallFormat::kDeepSeekV3})
    EXPECT_EQ(tool_call_format_named(tool_call_format_name(f)), f);
  EXPECT_TRUE(marked_by_special_tokens(ToolCallFormat::kKimiK2));
  EXPECT_FALSE(marked_by_special_tokens(ToolCallFormat::kHermes));
  EXPECT_FALSE(tool_call_format_named("pythonic"));
  EXPECT_EQ(detect_tool_call_format("{{ '<tool_call>\\n' }}"), ToolCallFormat::kHermes);
  EXPECT_FALSE(detect_tool_call_format("{{ messages[0].content }}"));
}

TEST(ToolCallsTest, StructuralTagNamesOnlyTheChosenFunction) {
  const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "b"}}])");
  const json all = json::parse(tool_call_structural_tag(ToolCallFormat::kHermes, tools, ""));
  EXPECT_EQ(all["type"], "structural_tag");
  EXPECT_EQ(all["format"]["type"], "tags_with_separator");
  EXPECT_EQ(all["format"]["tags"].size(), 2u);
  const json one = json::parse(tool_call_structural_tag(ToolCallFormat::kHermes, tools, "b"));
  ASSERT_EQ(one["format"]["tags"].size(), 1u);
  EXPECT_EQ(one["format"]["tags"][0]["begin"], "<tool_call>\n{\"name\": \"b\", \"arguments\": ");
  const json mistral = json::parse(tool_call_structural_tag(ToolCallFormat::kMistral, tools, ""));
  EXPECT_EQ(mistral["format"]["type"], "sequence");  // "[", the calls, "]"
  EXPECT_EQ(mistral["format"]["elements"][0]["value"], "[");
}

}  // namespace
}  // namespace zl::server
