// `zerolayer generate --chat` end to end: a model without a chat template is a
// clear error; --chat-template chatml (or a file) renders the prompt and runs.
#include <gtest/gtest.h>

#include "test_util.h"

namespace zl {
namespace {

std::string stories() { return test::shared_path("models/stories260K.gguf"); }

TEST(ChatCli, ModelWithoutTemplateIsAClearError) {
  if (stories().empty()) GTEST_SKIP() << "../shared is missing";
  auto r = test::run_cli({"generate", "--model", stories(), "--prompt", "Hi", "--chat", "-n", "4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no chat template"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--chat-template"), std::string::npos) << r.err;
}

TEST(ChatCli, ChatmlTemplateRendersAndGenerates) {
  if (stories().empty()) GTEST_SKIP() << "../shared is missing";
  auto r = test::run_cli({"generate", "--model", stories(), "--prompt", "Hi", "--chat-template", "chatml", "-n", "8",
                          "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("generated tokens"), std::string::npos) << r.err;
}

TEST(ChatCli, TemplateFileAndItsErrors) {
  if (stories().empty()) GTEST_SKIP() << "../shared is missing";
  std::string good = test::write_temp_file("t.jinja", "{{ bos_token }}[{{ messages[0].content }}]{% if add_generation_prompt %}>{% endif %}");
  auto r = test::run_cli({"generate", "--model", stories(), "--prompt", "Hey", "--chat", "--chat-template", good, "-n", "2",
                          "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("<s>[Hey]>", 0), 0u) << r.out;
  // The template wrote <s>, so the tokenizer does not add a second one: [<s>, '[', ...].
  std::string bad = test::write_temp_file("bad.jinja", "line 1\n{{ raise_exception('no users allowed') }}");
  r = test::run_cli({"generate", "--model", stories(), "--prompt", "Hey", "--chat-template", bad});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no users allowed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
  r = test::run_cli({"generate", "--model", stories(), "--prompt", "Hey", "--chat-template", "/nonexistent.jinja"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent.jinja"), std::string::npos) << r.err;
}

// serve with a --chat-template that does not parse exits at start-up, naming
// it (issue 27: it served on, answering every chat request 400).
TEST(ChatCli, ServeRefusesATemplateThatDoesNotParse) {
  std::string broken = test::write_temp_file("broken.jinja", "{% for m in messages %}{{ m.content }}");
  auto r = test::run_cli({"serve", "--model", "dummy:tiny", "--port", "0", "--shm-name", "", "--chat-template", broken});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--chat-template"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("broken.jinja"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace zl
