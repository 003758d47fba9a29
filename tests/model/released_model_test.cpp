// A released model end to end: Gemma 3 270M in llama-quantize's Q4_K_M (Q5_0,
// Q8_0, Q4_K and Q6_K tensors; scripts/fetch_models.sh puts it in the model
// cache), against llama.cpp's greedy continuations of the same file
// (tests/golden/released, scripts/golden/make_released_goldens.py): our
// tokenizer gives llama.cpp's prompt ids, and teacher-forced on llama.cpp's
// tokens, our top-1 is llama.cpp's at each of the 64 steps of each prompt
// where llama.cpp's top-1 / top-2 margin is at least kMinMargin. The KV cache
// is f16, as llama.cpp's is by default (377 of the 384 top-1 agree; 376 with
// an f32 cache).
//
// Not yet at every step: at 5 of the 384 steps (margins 0.0002 - 0.08) our
// top-1 is llama.cpp's second, our logits differing from its by up to ~0.45
// there. llama.cpp multiplies Q4_K / Q6_K weights with activations quantized
// in blocks of 256 with an f32 scale (q8_K); we use blocks of 32 for every
// format. Emulating its f16 GELU table did not help.
// Skipped, naming the path, when the file is not in the cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bundle/model_loader.h"
#include "model/llama.h"
#include "prompt_logits.h"
#include "test_util.h"

namespace zl {
namespace {

constexpr const char* kGemmaFile = "gemma-3-270m-q4_k_m.gguf";
constexpr double kMinMargin = 0.25;

nlohmann::json read_golden() {
  std::ifstream in(test::golden_path("released/gemma-3-270m-q4_k_m.json"));
  return nlohmann::json::parse(in);
}

TEST(ReleasedModelTest, Gemma3GreedyStepsMatchLlamaCpp) {
  const std::string path = test::model_cache_path(kGemmaFile);
  if (path.empty()) GTEST_SKIP() << kGemmaFile << " is not in " << test::model_cache_dir() << " (scripts/fetch_models.sh)";
  auto source = open_model(path);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  ASSERT_TRUE(source->tokenizer);
  EXPECT_EQ(source->config.arch, "gemma3");
  auto weights = load_model_weights(*source);
  ASSERT_TRUE(weights.ok()) << weights.status().to_string();
  const int32_t vocab = source->config.vocab_size;
  ThreadPool pool(2);
  LlamaModel model(source->config, *weights, pool, 64);
  auto cache = KvCache::create(source->config, 8, 16, 0, KvCacheDtype::kF16);
  ASSERT_TRUE(cache.ok());
  const std::vector<int32_t> blocks = {3, 7, 0, 5, 1, 6};  // 96 positions, scattered
  std::vector<float> logits(static_cast<size_t>(vocab));

  const nlohmann::json golden = read_golden();
  for (const nlohmann::json& run : golden["runs"]) {
    const std::string text = run["text"].get<std::string>();
    const auto prompt = run["prompt_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(source->tokenizer->encode(text), prompt) << text;
    const auto greedy = run["greedy_ids"].get<std::vector<int32_t>>();
    const auto margins = run["margins"].get<std::vector<double>>();
    test::TeacherForcedRun forced(model, **cache, blocks, prompt, greedy);
    int32_t num_checked = 0, num_same = 0;
    for (size_t step = 0; step < greedy.size(); ++step) {
      ASSERT_TRUE(forced.step(step, logits.data()).ok());
      const auto top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      num_same += top == greedy[step];
      if (margins[step] < kMinMargin) continue;
      ++num_checked;
      EXPECT_EQ(top, greedy[step]) << text << ": step " << step << ", llama.cpp's margin " << margins[step]
                                   << ", our logits " << logits[static_cast<size_t>(top)] << " vs "
                                   << logits[static_cast<size_t>(greedy[step])];
    }
    std::printf("%s: top-1 as llama.cpp's at %d of %zu steps; %d steps with margin >= %.2f checked\n", text.c_str(),
                num_same, greedy.size(), num_checked, kMinMargin);
    EXPECT_GE(num_checked, static_cast<int32_t>(greedy.size()) / 2);
  }
}

}  // namespace
}  // namespace zl
