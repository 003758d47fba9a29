// The KV cache in each storage format against the f32 cache, on trained
// models: stories260K (f32 weights, ../shared) and Gemma 3 270M Q4_K_M (the
// model cache; skipped, naming the path, without it). The f32 run decodes
// greedily; each format is then taught the same tokens (prompt, then
// single-token steps through scattered blocks). Every step's logits must
// satisfy max |ours - f32| <= tol x max |f32|, and the top-1 must be f32's
// at kMinSame of the kSteps steps at least.
//
// A stored key or value is off by at most 2^-11 (f16), 2^-8 (bf16) of itself,
// absmax / 254 of its block (q8_0) or 2^-4 of itself (fp8 e4m3).
// stories260K measures that alone: worst rows 9.6e-4 (f16), 8.0e-3 (bf16),
// 6.2e-2 (q8_0: its keys have outlier dimensions, so small values lose most
// to the block's scale), 0.14 (fp8); tolerances 2-2.5x those. Gemma's Q4_K
// and Q6_K matmuls quantize their inputs to int8 blocks of 32, so any change
// in attention's output moves some inputs across a rounding step (absmax /
// 254): that floor dominates, and f16, bf16 and q8_0 all measure 3.4-3.9e-2,
// fp8 4.5e-2; tolerance 8e-2 (fp8 0.1). Top-1 agreement measured 45-48 of
// 48 on both models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bundle/model_loader.h"
#include "model/llama.h"
#include "test_util.h"

namespace zl {
namespace {

constexpr int32_t kSteps = 48;
constexpr int32_t kBlockSize = 16;

constexpr int32_t kMinSame = 42;

struct Tolerance {
  KvCacheDtype dtype;
  double stories, gemma;  // x max |f32 logit|
};
constexpr Tolerance kTolerances[] = {{KvCacheDtype::kF16, 2e-3, 8e-2},
                                     {KvCacheDtype::kBF16, 2e-2, 8e-2},
                                     {KvCacheDtype::kQ8_0, 0.15, 8e-2},
                                     {KvCacheDtype::kFp8, 0.3, 0.1}};

struct Loaded {
  ModelSource source;
  ModelWeights weights;
};

// Logits of each step ([steps, vocab]): step 0 feeds the prompt, step k
// greedy[k - 1], through scattered blocks. teach = false: greedy is the
// run's own argmax, written as it goes.
std::vector<float> run(const Loaded& m, KvCacheDtype dtype, const std::vector<int32_t>& prompt,
                       std::vector<int32_t>& greedy, bool teach) {
  const ModelConfig& c = m.source.config;
  ThreadPool pool(2);
  LlamaModel model(c, m.weights, pool, static_cast<int32_t>(prompt.size()));
  const int32_t num_blocks = (static_cast<int32_t>(prompt.size()) + kSteps + kBlockSize - 1) / kBlockSize;
  auto cache = KvCache::create(c, num_blocks + 2, kBlockSize, 0, dtype);
  EXPECT_TRUE(cache.ok()) << cache.status().to_string();
  if (!cache.ok()) return {};
  std::vector<int32_t> blocks;  // scattered: every block in reverse, the first two unused
  for (int32_t b = num_blocks + 1; b >= 2; --b) blocks.push_back(b);
  const size_t vocab = static_cast<size_t>(c.vocab_size);
  std::vector<float> logits(kSteps * vocab);
  if (!teach) greedy.assign(kSteps, 0);
  int32_t pos = 0;
  for (size_t step = 0; step < kSteps; ++step) {
    const std::vector<int32_t> tokens = step == 0 ? prompt : std::vector<int32_t>{greedy[step - 1]};
    const auto n = static_cast<int32_t>(tokens.size());
    SeqChunk chunk{0, n, pos, blocks};
    const int32_t last = n - 1;
    pos += n;
    float* row = &logits[step * vocab];
    EXPECT_TRUE(model.forward({tokens, {&chunk, 1}, {&last, 1}}, **cache, row).ok());
    if (!teach) greedy[step] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  }
  return logits;
}

void compare_formats(const std::string& path, const std::string& text, double Tolerance::*tol) {
  Loaded m;
  auto source = open_model(path);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  m.source = std::move(*source);
  auto weights = load_model_weights(m.source);
  ASSERT_TRUE(weights.ok()) << weights.status().to_string();
  m.weights = std::move(*weights);
  const std::vector<int32_t> prompt = m.source.tokenizer->encode(text);
  ASSERT_GE(prompt.size(), 40u);
  const size_t vocab = static_cast<size_t>(m.source.config.vocab_size);
  std::vector<int32_t> greedy;
  const std::vector<float> exact = run(m, KvCacheDtype::kF32, prompt, greedy, false);
  for (const Tolerance& t : kTolerances) {
    const std::vector<float> got = run(m, t.dtype, prompt, greedy, true);
    double worst = 0;
    int32_t same = 0;
    for (size_t step = 0; step < kSteps; ++step) {
      const float* a = &exact[step * vocab];
      const float* b = &got[step * vocab];
      float max_abs = 0, diff = 0;
      for (size_t i = 0; i < vocab; ++i) {
        max_abs = std::max(max_abs, std::fabs(a[i]));
        diff = std::max(diff, std::fabs(a[i] - b[i]));
      }
      worst = std::max(worst, double{diff} / max_abs);
      EXPECT_LE(diff, t.*tol * max_abs) << kv_cache_dtype_name(t.dtype) << " step " << step;
      same += std::max_element(b, b + vocab) - b == greedy[step];
    }
    EXPECT_GE(same, kMinSame) << kv_cache_dtype_name(t.dtype);
    std::printf("%s: max |logits - f32 KV| = %.3g x max |logit|; top-1 as f32's at %d of %d steps\n",
                kv_cache_dtype_name(t.dtype), worst, same, kSteps);
  }
}

TEST(KvDtypeModelTest, Stories260KStaysNearTheF32Cache) {
  const std::string path = test::shared_path("models/stories260K.gguf");
  if (path.empty()) GTEST_SKIP() << "../shared/models/stories260K.gguf is missing";
  compare_formats(path,
                  "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with "
                  "her friends. One day, she saw a big red ball under a tree.",
                  &Tolerance::stories);
}

TEST(KvDtypeModelTest, Gemma3StaysNearTheF32Cache) {
  const std::string path = test::model_cache_path("gemma-3-270m-q4_k_m.gguf");
  if (path.empty())
    GTEST_SKIP() << "gemma-3-270m-q4_k_m.gguf is not in " << test::model_cache_dir() << " (scripts/fetch_models.sh)";
  compare_formats(path,
                  "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
                  "combined movable metal type, oil-based ink and a screw press adapted from those used to make wine. "
                  "Within fifty years, presses were at work in more than two hundred cities, and",
                  &Tolerance::gemma);
}

}  // namespace
}  // namespace zl
