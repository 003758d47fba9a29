// A released model end to end: Gemma 3 270M in llama-quantize's Q4_K_M (Q5_0,
// Q8_0, Q4_K and Q6_K tensors; scripts/fetch_models.sh puts it in the model
// cache), against llama.cpp's greedy continuations of the same file on 12
// prompts (tests/golden/released, scripts/golden/make_released_goldens.py):
// our tokenizer gives llama.cpp's prompt ids, and teacher-forced on
// llama.cpp's tokens (f32 KV cache, as its run), our top-1 is llama.cpp's at
// every step except where the file's own function, computed in float64 by
// the golden script (exact_*), scores our token and llama.cpp's within
// kNearTie of each other.
//
// Why not at every step: this model's activations have outliers (|x| ~200 in
// a block of 32), so rounding them to 8 bits (llama.cpp's q8_0 and q8_K, our
// blocks of 32) moves its logits by tenths, and a last-bit difference
// upstream flips a code and is amplified the same way. llama.cpp's one-token
// and batched evaluations of the same prefix disagree at such steps, as do
// two x86 builds of it, and llama.cpp departs from the exact function's
// top-1 at 9 of the 768 steps, by gaps up to 0.28 (bench/results/gemma3_270m):
// kNearTie gives us the same slack. Our logits must also stay within
// kMaxExactError of the exact function's at its 5 best tokens of each step,
// where llama.cpp's depart by up to 1.44 (median 0.16).
// Skipped, naming the path, when the file is not in the cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "bundle/model_loader.h"
#include "model/llama.h"
#include "prompt_logits.h"
#include "test_util.h"

namespace zl {
namespace {

constexpr const char* kGemmaFile = "gemma-3-270m-q4_k_m.gguf";
constexpr double kNearTie = 0.3;
constexpr double kMaxExactError = 1.5;

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
  auto cache = KvCache::create(source->config, 8, 16, 0, KvCacheDtype::kF32);
  ASSERT_TRUE(cache.ok());
  const std::vector<int32_t> blocks = {3, 7, 0, 5, 1, 6};  // 96 positions, scattered
  std::vector<float> logits(static_cast<size_t>(vocab));

  const nlohmann::json golden = read_golden();
  int32_t num_identical = 0, num_steps = 0, num_as_llama = 0, num_as_exact = 0;
  std::vector<double> errors;  // |ours - exact| at the exact function's 5 best of each step
  for (const nlohmann::json& run : golden["runs"]) {
    const std::string text = run["text"].get<std::string>();
    const auto prompt = run["prompt_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(source->tokenizer->encode(text), prompt) << text;
    const auto greedy = run["greedy_ids"].get<std::vector<int32_t>>();
    test::TeacherForcedRun forced(model, **cache, blocks, prompt, greedy);
    size_t first_other = greedy.size();
    for (size_t step = 0; step < greedy.size(); ++step) {
      ASSERT_TRUE(forced.step(step, logits.data()).ok());
      const auto top = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      // The exact function's 5 best [id, logit], and its logit of llama.cpp's token.
      const nlohmann::json& exact = run["exact_top5"][step];
      const double exact_llama = run["exact_greedy_logit"][step].get<double>();
      std::optional<double> exact_ours;
      for (const nlohmann::json& entry : exact) {
        const int32_t id = entry[0].get<int32_t>();
        errors.push_back(std::fabs(logits[static_cast<size_t>(id)] - entry[1].get<double>()));
        if (id == top) exact_ours = entry[1].get<double>();
      }
      ++num_steps;
      num_as_exact += top == exact[0][0].get<int32_t>();
      if (top == greedy[step]) {
        ++num_as_llama;
        continue;
      }
      first_other = std::min(first_other, step);
      ASSERT_TRUE(exact_ours.has_value()) << text << ": step " << step << ": our top-1 " << top
                                          << " is not among the exact function's 5 best";
      EXPECT_LE(std::fabs(*exact_ours - exact_llama), kNearTie)
          << text << ": step " << step << ": ours " << top << ", llama.cpp's " << greedy[step]
          << "; the exact function's logits " << *exact_ours << " and " << exact_llama;
    }
    num_identical += first_other == greedy.size();
    std::printf("%s: llama.cpp's continuation until step %zu of %zu\n", text.c_str(), first_other, greedy.size());
  }
  std::sort(errors.begin(), errors.end());
  std::printf("%d of %zu continuations identical to llama.cpp's; top-1 as llama.cpp's at %d of %d steps, as the "
              "exact function's at %d; logit error at the exact function's 5 best: median %.3f, max %.3f\n",
              num_identical, golden["runs"].size(), num_as_llama, num_steps, num_as_exact, errors[errors.size() / 2],
              errors.back());
  EXPECT_LE(errors.back(), kMaxExactError);
}

}  // namespace
}  // namespace zl
