// Reasoning split (server/reasoning.h): <think> ... </think> (and Command
// R's thinking tags, and harmony's analysis channel) goes to the reasoning
// and the rest to the content, whole or fed a byte at a time (a tag cut
// anywhere by token boundaries), from a prompt that opens the reasoning or
// from an output that opens it itself.
#include "server/reasoning.h"

#include <gtest/gtest.h>

#include <utility>

namespace zl::server {
namespace {

// (reasoning, content) of `output`, fed in pieces of `step` bytes.
std::pair<std::string, std::string> split(ReasoningFormat format, std::string_view output, bool starts_inside,
                                          size_t step) {
  ReasoningSplitter splitter(format, starts_inside);
  std::string reasoning, content;
  for (size_t i = 0; i < output.size(); i += step) splitter.feed(output.substr(i, step), reasoning, content);
  splitter.finish(reasoning, content);
  return {reasoning, content};
}

void expect_split(std::string_view output, bool starts_inside, const std::string& reasoning,
                  const std::string& content, ReasoningFormat format = ReasoningFormat::kThink) {
  for (size_t step : {output.size() + 1, size_t{1}, size_t{2}, size_t{3}, size_t{5}}) {
    SCOPED_TRACE(testing::Message() << "output \"" << output << "\", pieces of " << step);
    const auto [r, c] = split(format, output, starts_inside, step);
    EXPECT_EQ(r, reasoning);
    EXPECT_EQ(c, content);
  }
}

TEST(ReasoningTest, OutputThatOpensItsReasoning) {
  expect_split("<think>\nTwo and two.\n</think>\n\nFour.", false, "\nTwo and two.\n", "\n\nFour.");
  expect_split("\n<think>a<b</think>c", false, "a<b", "c");  // blanks before <think> dropped
  expect_split("Four.", false, "", "Four.");
  expect_split("<thinking>x", false, "", "<thinking>x");
  expect_split("Four. <think>x</think>", false, "", "Four. <think>x</think>");  // only at the start
  expect_split("<think>cut off", false, "cut off", "");
  expect_split("<thi", false, "", "<thi");
  expect_split("  ", false, "", "  ");
}

TEST(ReasoningTest, PromptThatOpensTheReasoning) {
  expect_split("Two and two.</think>Four.", true, "Two and two.", "Four.");
  expect_split("<think>again</think>Four.", true, "again", "Four.");  // a repeated <think> is dropped
  expect_split("never closed </thin", true, "never closed </thin", "");
  expect_split("</think>", true, "", "");
  expect_split("a</think>b</think>", true, "a", "b</think>");
}

TEST(ReasoningTest, PromptsAndTemplates) {
  EXPECT_TRUE(prompt_opens_reasoning(ReasoningFormat::kThink, "<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_opens_reasoning(ReasoningFormat::kThink, "<｜Assistant｜><think>"));
  EXPECT_FALSE(prompt_opens_reasoning(ReasoningFormat::kThink, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning(ReasoningFormat::kThink, ""));
  EXPECT_TRUE(detect_reasoning_format("{{ '<think>' }}{{ x.split('</think>') }}").has_value());
  EXPECT_FALSE(detect_reasoning_format("{{ '<|im_start|>' }}").has_value());
  EXPECT_EQ(reasoning_format_named("deepseek_r1"), ReasoningFormat::kThink);
  EXPECT_EQ(reasoning_format_named("qwen3"), ReasoningFormat::kThink);
  EXPECT_FALSE(reasoning_format_named("granite").has_value());
  EXPECT_EQ(reasoning_format_named("command_r7b"), ReasoningFormat::kCommandR);
  EXPECT_EQ(reasoning_format_named("openai_gptoss"), ReasoningFormat::kHarmony);
  EXPECT_EQ(detect_reasoning_format("{{ '<|START_THINKING|>' + plan + '<|END_THINKING|>' }}"), ReasoningFormat::kCommandR);
  EXPECT_EQ(detect_reasoning_format("{{ '<|start|>assistant<|channel|>analysis<|message|>' }}"),
            ReasoningFormat::kHarmony);
  EXPECT_TRUE(marked_by_special_tokens(ReasoningFormat::kHarmony));
  EXPECT_FALSE(marked_by_special_tokens(ReasoningFormat::kThink));
  EXPECT_FALSE(prompt_opens_reasoning(ReasoningFormat::kHarmony, "<|start|>assistant"));
}

TEST(ReasoningTest, CommandRThinkingAndResponseMarkers) {
  constexpr auto kCommandR = ReasoningFormat::kCommandR;
  expect_split("<|START_THINKING|>I will look it up.<|END_THINKING|><|START_ACTION|>[]<|END_ACTION|>", false,
               "I will look it up.", "<|START_ACTION|>[]<|END_ACTION|>", kCommandR);
  expect_split("<|START_RESPONSE|>Paris.<|END_RESPONSE|>", false, "", "Paris.", kCommandR);
  expect_split("Plain <|START_RESP", false, "", "Plain <|START_RESP", kCommandR);  // a cut marker stays text
}

TEST(ReasoningTest, HarmonyChannels) {
  constexpr auto kHarmony = ReasoningFormat::kHarmony;
  expect_split("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Four.<|return|>",
               false, "Think.", "Four.", kHarmony);
  // A message to a recipient stays for the tool parser, header and all.
  expect_split("<|channel|>analysis<|message|>Call it.<|end|><|start|>assistant<|channel|>commentary "
               "to=functions.f <|constrain|>json<|message|>{\"a\": 1}<|call|>",
               false, "Call it.",
               "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}<|call|>",
               kHarmony);
  expect_split("<|channel|>analysis<|message|>cut off", false, "cut off", "", kHarmony);
  expect_split("no markers", false, "", "no markers", kHarmony);  // nothing is lost
  // A header cut off by max_tokens is markup, not text.
  expect_split("<|channel|>final<|message|>Hi.<|end|><|start|>assistant<|chan", false, "", "Hi.", kHarmony);
}

}  // namespace
}  // namespace zl::server
