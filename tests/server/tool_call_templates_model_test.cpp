// Each tool-call syntax against the chat templates that teach it (from
// ../shared/tokenizers/chat-templates): the template's syntax is detected
// from its source, and an assistant turn with tool calls, rendered by the
// template, parses back into the same calls (names and arguments) with no
// content left over. The assistant's text is the conversation's rendering
// past the prompt's (add_generation_prompt), up to its end-of-turn token.
// Call ids are 9 letters and digits, as Mistral's templates demand.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "bundle/chat_prompt.h"
#include "jinja/chat_template.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"
#include "test_util.h"

namespace zl::server {
namespace {

using ojson = nlohmann::ordered_json;
using nlohmann::json;

struct Case {
  const char* file;
  ToolCallFormat format;
  bool multiple;  // the template renders more than one call per turn
  bool object_arguments = true;  // it renders arguments given as objects (else as JSON text)
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The assistant text as the model would write it: up to its end-of-turn.
std::string until_end_of_turn(std::string text) {
  for (const char* end : {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "</s>", "<｜end▁of▁sentence｜>", "<|END_OF_TURN_TOKEN|>"}) {
    const size_t at = text.find(end);
    if (at != std::string::npos) text.resize(at);
  }
  return text;
}

class ToolCallTemplateTest : public ::testing::TestWithParam<Case> {};

TEST_P(ToolCallTemplateTest, RenderedCallsParseBack) {
  const Case& c = GetParam();
  const std::string path = test::shared_path(std::string("tokenizers/chat-templates/") + c.file);
  if (path.empty()) GTEST_SKIP() << "../shared is missing";
  const std::string source = read_text(path);
  ASSERT_FALSE(source.empty()) << path;
  EXPECT_EQ(detect_tool_call_format(source), c.format);
  auto parsed = ChatTemplate::parse(source, c.file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();

  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Weather in a city", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "get_time", "description": "Time",
      "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}}])");
  ojson calls = ojson::array();
  calls.push_back({{"id", "call1abcd"}, {"type", "function"},
                   {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"days", 3}}}}}});
  if (c.multiple)
    calls.push_back({{"id", "call2abcd"}, {"type", "function"},
                     {"function", {{"name", "get_time"}, {"arguments", {{"tz", "CET"}}}}}});
  ojson messages = ojson::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}});
  ChatTemplateOptions options;
  options.tools = tools;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  auto prompt = apply_chat_template(*parsed, messages, options);
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  // As the server passes it on (chat_tools.h: a null content becomes "" or
  // stays null, the arguments objects or their JSON text, as the template
  // renders them).
  const ToolCallRendering way = probe_tool_call_rendering(*parsed);
  EXPECT_EQ(way.object_arguments, c.object_arguments);
  ojson sent = calls;
  if (!way.object_arguments)
    for (ojson& call : sent) call["function"]["arguments"] = call["function"]["arguments"].dump();
  messages.push_back({{"role", "assistant"}, {"content", way.null_content ? ojson() : ojson("")}, {"tool_calls", sent}});
  options.add_generation_prompt = false;
  auto whole = apply_chat_template(*parsed, messages, options);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  ASSERT_GT(whole->size(), prompt->size() / 2);
  // Past what the two renderings share (a reasoning template's prompt ends
  // with "<think>\n", which a turn without reasoning does not have).
  size_t common = 0;
  while (common < prompt->size() && common < whole->size() && (*prompt)[common] == (*whole)[common]) ++common;
  // From the tag they part in when the prompt is not all shared: "<think>"
  // and "<tool_call>" share "<t", R1's "<think>" and "<｜tool▁calls▁begin｜>" "<".
  if (common < prompt->size()) common = whole->rfind('<', common - 1);
  const std::string assistant = until_end_of_turn(whole->substr(common));

  // The reasoning parser first, as the server runs it: Qwen3 writes an empty
  // <think></think> before the calls, Command R7B its (empty) tool plan, and
  // gpt-oss's call is a harmony message. (A rendered turn has no open
  // reasoning, even where the prompt opens one: QwQ's ends with "<think>\n".)
  std::string reasoning, text = assistant;
  if (const std::optional<ReasoningFormat> format = detect_reasoning_format(source)) {
    ReasoningSplitter splitter(*format, false);
    text.clear();
    splitter.feed(assistant, reasoning, text);
    splitter.finish(reasoning, text);
  }
  const ParsedOutput out = parse_tool_calls(c.format, text);
  EXPECT_EQ(out.content, "") << assistant;
  ASSERT_EQ(out.calls.size(), calls.size()) << assistant;
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(out.calls[i].name, calls[i]["function"]["name"]);
    EXPECT_EQ(json::parse(out.calls[i].arguments), json::parse(calls[i]["function"]["arguments"].dump()));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Templates, ToolCallTemplateTest,
    ::testing::Values(Case{"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes, true},
                      Case{"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::kHermes, true},
                      Case{"Qwen-QwQ-32B.jinja", ToolCallFormat::kHermes, true},
                      Case{"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolCallFormat::kHermes, true},
                      Case{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes, true},
                      Case{"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3Json, false},
                      Case{"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3Json, false},
                      Case{"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::kLlama3Json, false},
                      Case{"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral, true},
                      Case{"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::kMistral, true},
                      Case{"deepseek-ai-DeepSeek-V3.1.jinja", ToolCallFormat::kDeepSeekV31, true, false},
                      Case{"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", ToolCallFormat::kDeepSeekV3, true, false},
                      Case{"moonshotai-Kimi-K2.jinja", ToolCallFormat::kKimiK2, true},
                      Case{"meetkai-functionary-medium-v3.2.jinja", ToolCallFormat::kFunctionaryV32, true, false},
                      Case{"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", ToolCallFormat::kCommandR7b, true},
                      // gpt-oss renders the first call of a turn only.
                      Case{"openai-gpt-oss-120b.jinja", ToolCallFormat::kHarmony, false}),
    [](const auto& info) {
      std::string name = info.param.file;
      name = name.substr(0, name.find(".jinja"));
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace zl::server
