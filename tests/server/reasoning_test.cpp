// Reasoning split (server/reasoning.h): <think> ... </think> goes to the
// reasoning and the rest to the content, whole or fed a byte at a time (a
// tag cut anywhere by token boundaries), from a prompt that opens the
// reasoning or from an output that opens it itself.
#include "server/reasoning.h"

#include <gtest/gtest.h>

#include <utility>

namespace zl::server {
namespace {

// (reasoning, content) of `output`, fed in pieces of `step` bytes.
std::pair<std::string, std::string> split(std::string_view output, bool starts_inside, size_t step) {
  ReasoningSplitter splitter(starts_inside);
  std::string reasoning, content;
  for (size_t i = 0; i < output.size(); i += step) splitter.feed(output.substr(i, step), reasoning, content);
  splitter.finish(reasoning, content);
  return {reasoning, content};
}

void expect_split(std::string_view output, bool starts_inside, const std::string& reasoning,
                  const std::string& content) {
  for (size_t step : {output.size() + 1, size_t{1}, size_t{2}, size_t{3}, size_t{5}}) {
    SCOPED_TRACE(testing::Message() << "output \"" << output << "\", pieces of " << step);
    const auto [r, c] = split(output, starts_inside, step);
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
  EXPECT_TRUE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning(""));
  EXPECT_TRUE(detect_reasoning_format("{{ '<think>' }}{{ x.split('</think>') }}").has_value());
  EXPECT_FALSE(detect_reasoning_format("{{ '<|im_start|>' }}").has_value());
  EXPECT_EQ(reasoning_format_named("deepseek_r1"), ReasoningFormat::kThink);
  EXPECT_EQ(reasoning_format_named("qwen3"), ReasoningFormat::kThink);
  EXPECT_FALSE(reasoning_format_named("granite").has_value());
}

}  // namespace
}  // namespace zl::server
