// The zerolayer binary end to end: generate, check and tokenize on real and
// golden models, and a clear message with a non-zero exit for each kind of
// bad input (the list: missing and truncated files, lying headers,
// wrong shapes, unknown architectures, a tokenizer that does not fit, a prompt
// longer than the context, out-of-range sampling values).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/mapped_file.h"
#include "kernels/cuda/runtime.h"
#include "test_util.h"

namespace zl {
namespace {

namespace fs = std::filesystem;

std::string stories() { return test::shared_path("models/stories260K.gguf"); }

#define REQUIRE_SHARED(path)                                   \
  if ((path).empty()) GTEST_SKIP() << "../shared is missing";

// A copy of a golden HF model folder whose config.json is passed through `edit`.
std::string copy_model(const std::string& name, const std::string& from, const std::string& to) {
  std::string src = test::golden_path("logits/llama-gqa-tied");
  std::string dir = test::temp_dir() + "/" + name;
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(src))
    fs::copy_file(entry.path(), dir + "/" + entry.path().filename().string(), fs::copy_options::overwrite_existing);
  if (!from.empty()) {
    std::string config = *read_file(dir + "/config.json");
    size_t at = config.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    config.replace(at, from.size(), to);
    std::ofstream(dir + "/config.json", std::ios::trunc) << config;
  }
  return dir;
}

void expect_error(const test::CommandResult& r, const std::vector<std::string>& needles) {
  EXPECT_NE(r.exit_code, 0) << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
}

TEST(CliTest, GenerateStories260KPrintsTheKnownStoryAndASummary) {
  REQUIRE_SHARED(stories());
  auto r = test::run_cli({"generate", "--model", stories(), "--prompt", "Once upon a time", "--max-new-tokens", "60",
                          "--temperature", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily. She loved to play outside in the park.", 0), 0u)
      << r.out;
  for (const char* field : {"prompt tokens: 5", "generated tokens: 60", "time to first token", "tokens/s"})
    EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
}

TEST(CliTest, StopStringEndsGenerationAndIsNotPrinted) {
  REQUIRE_SHARED(stories());
  auto r = test::run_cli({"generate", "--model", stories(), "--prompt", "Once upon a time", "--max-new-tokens", "60",
                          "--temperature", "0", "--stop", "Lily"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Once upon a time, there was a little girl named \n");
  EXPECT_NE(r.err.find("finish: stop"), std::string::npos) << r.err;
}

TEST(CliTest, SeededSamplingIsReproducible) {
  REQUIRE_SHARED(stories());
  std::vector<std::string> args = {"generate", "--model", stories(), "--prompt", "Once upon a time", "-n", "30",
                                   "--temperature", "0.9", "--top-p", "0.9", "--top-k", "40", "--seed", "123"};
  auto a = test::run_cli(args), b = test::run_cli(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(CliTest, TokenizeAndDecodeRoundTrip) {
  std::string tok = test::shared_path("tokenizers/llama-2/tokenizer.json");
  REQUIRE_SHARED(tok);
  auto r = test::run_cli({"tokenize", "--tokenizer", tok, "--text", "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[1,15043,3186]\n");
  // (Llama-2's tokenizer.json marks <s> normalized, so HF keeps it when
  // decoding with skip_special_tokens; decode the text ids alone.)
  auto d = test::run_cli({"tokenize", "--tokenizer", tok, "--decode"}, "[15043,3186]");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, "Hello world\n");
  expect_error(test::run_cli({"tokenize", "--tokenizer", tok, "--decode", "--text", "[1, 99999]"}), {"99999"});
  expect_error(test::run_cli({"tokenize", "--tokenizer", tok, "--decode", "--text", "not json"}), {"JSON array"});
}

TEST(CliTest, CheckPassesOnConsistentModels) {
  REQUIRE_SHARED(stories());
  auto r = test::run_cli({"check", "--model", stories()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("check: ok"), std::string::npos) << r.out;
  auto d = test::run_cli({"check", "--model", "dummy:llama-1b"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("vocab 128256"), std::string::npos) << d.out;
}

TEST(CliTest, CheckRejectsATokenizerThatDoesNotFit) {
  std::string tok = test::shared_path("tokenizers/llama-2/tokenizer.json");
  REQUIRE_SHARED(tok);
  auto r = test::run_cli({"check", "--model", stories(), "--tokenizer", tok});
  expect_error(r, {"mismatch: vocab size", "32000", "512"});
}

TEST(CliTest, MissingModel) {
  expect_error(test::run_cli({"generate", "--model", "/nonexistent/model.gguf", "--prompt", "x"}),
               {"/nonexistent/model.gguf"});
  expect_error(test::run_cli({"generate", "--model", "dummy:nope", "--prompt", "x"}), {"unknown dummy model"});
}

TEST(CliTest, TruncatedGguf) {
  REQUIRE_SHARED(stories());
  std::string bytes = *read_file(stories());
  std::string path = test::write_temp_file("truncated.gguf", bytes.substr(0, bytes.size() / 2));
  expect_error(test::run_cli({"generate", "--model", path, "--prompt", "x"}), {"truncated.gguf"});
}

TEST(CliTest, TruncatedSafetensors) {
  std::string dir = copy_model("truncated", "", "");
  std::string bytes = *read_file(dir + "/model.safetensors");
  std::ofstream(dir + "/model.safetensors", std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 100);
  expect_error(test::run_cli({"check", "--model", dir}), {"model.safetensors"});
}

TEST(CliTest, HeaderThatLiesAboutOffsets) {
  std::string dir = copy_model("lying", "", "");
  std::string bytes = *read_file(dir + "/model.safetensors");
  // Point the first tensor's data past the end of the file, keeping the header length.
  size_t at = bytes.find("\"data_offsets\":[0,");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 18, "\"data_offsets\":[9,");
  std::ofstream(dir + "/model.safetensors", std::ios::binary | std::ios::trunc) << bytes;
  expect_error(test::run_cli({"check", "--model", dir}), {"model.safetensors"});
}

TEST(CliTest, WrongTensorShape) {
  std::string dir = copy_model("shape", "\"intermediate_size\": 96", "\"intermediate_size\": 97");
  expect_error(test::run_cli({"check", "--model", dir}), {"mlp.gate_proj.weight", "shape"});
}

TEST(CliTest, UnknownArchitecture) {
  std::string dir = copy_model("arch", "LlamaForCausalLM", "GPTNeoXForCausalLM");
  expect_error(test::run_cli({"check", "--model", dir}), {"GPTNeoXForCausalLM"});
}

TEST(CliTest, PromptLongerThanTheContext) {
  REQUIRE_SHARED(stories());
  std::string prompt;
  for (int i = 0; i < 100; ++i) prompt += "Once upon a time ";
  expect_error(test::run_cli({"generate", "--model", stories(), "--prompt", prompt}), {"context"});
}

TEST(CliTest, OutOfRangeSamplingValues) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"--temperature", "nan"}, {"--temperature", "-1"}, {"--top-p", "1.5"}, {"--top-p", "nan"},
      {"--min-p", "-0.1"},      {"--top-k", "-5"},       {"--repetition-penalty", "0"},
      {"--presence-penalty", "3"}, {"--frequency-penalty", "nan"}};
  for (const auto& [flag, value] : cases) {
    std::string field = flag.substr(2);
    for (char& c : field)
      if (c == '-') c = '_';
    expect_error(test::run_cli({"generate", "--model", "dummy:tiny", "--prompt", "x", flag, value}), {field});
  }
}

TEST(CliTest, HelpOnEveryCommand) {
  for (const char* cmd : {"generate", "check", "tokenize"}) {
    auto r = test::run_cli({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("--model"), std::string::npos) << cmd << r.out;
  }
}

TEST(CliTest, DeviceFlagIsParsedAndAMissingGpuIsAClearError) {
  expect_error(test::run_cli({"generate", "--model", "dummy:tiny", "--prompt", "hi", "--device", "tpu"}),
               {"--device", "tpu"});
  std::string reason;
  if (cuda::device_count(&reason) > 0) GTEST_SKIP() << "a CUDA device is present";
  auto r = test::run_cli({"generate", "--model", "dummy:tiny", "--prompt", "hi", "--device", "cuda:0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.err.find("no CUDA device") != std::string::npos || r.err.find("built without CUDA") != std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace zl
