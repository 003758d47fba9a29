// GGUF files written by llama.cpp's own converter (convert_hf_to_gguf.py) from
// the transformers goldens, against what llama.cpp itself computes on the
// same files (tests/golden/llamacpp, made by
// scripts/golden/make_llamacpp_gguf_goldens.py; the mixture-of-experts ones,
// with llama.cpp's merged ffn_*_exps tensors, by make_moe_gguf_goldens.py
// through llama-server): an 8-token prompt, then 32 (MoE: 16) greedy steps,
// each fed llama.cpp's token.
//
// Every step's top-1 must be llama.cpp's (the goldens state each step's
// top-1 / top-2 margin; the smallest is ~0.008). The top-5 log-probabilities
// must agree within, in nats:
// - F16: 2e-2. We multiply the f16 weights with f32 activations (our logits
//   match transformers on the same rounded weights to ~2e-6,
//   llama_logits_model_test); llama.cpp rounds the activations to f16 (2^-11
//   relative) before every f16 dot product, which these random-weight models
//   amplify to up to ~1e-2 (measured 0.6e-3 to 1.1e-2).
// - Q8_0: 1e-3. Both engines quantize the activations to int8 blocks of 32
//   with the block scale rounded to f16 and multiply the same integer codes:
//   only summation order differs (measured ~5e-7).
// - Q8_0 with Gemma's GELU: 0.15. llama.cpp computes GELU through an f16
//   table (input and output rounded to f16, GGML_GELU_FP16); once activations
//   differ in their last bits an int8 code can round the other way (1/127 of
//   its block's largest value), and the difference grows towards the
//   format's own error (measured 0.012 on gemma2, 0.082 on gemma3).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bundle/model_loader.h"
#include "model/llama.h"
#include "prompt_logits.h"
#include "test_util.h"

namespace zl {
namespace {

// Log-softmax of one logits row, in double.
std::vector<double> log_softmax(const float* logits, int32_t n) {
  const double top = *std::max_element(logits, logits + n);
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(double{logits[i]} - top);
  std::vector<double> out(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = double{logits[i]} - top - std::log(sum);
  return out;
}

class LlamaCppGgufTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppGgufTest, GreedyStepsAndTop5MatchLlamaCpp) {
  const std::string dir = test::golden_path("llamacpp");
  std::ifstream in(dir + "/" + GetParam() + ".json");
  ASSERT_TRUE(in.good()) << GetParam();
  const nlohmann::json golden = nlohmann::json::parse(in);
  auto source = open_model(dir + "/" + golden["gguf_file"].get<std::string>());
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto weights = load_model_weights(*source);
  ASSERT_TRUE(weights.ok()) << weights.status().to_string();
  const int32_t vocab = source->config.vocab_size;
  ASSERT_EQ(vocab, golden["vocab_size"].get<int32_t>());
  // llama.cpp's context per sequence: LongRoPE picks its factors by it
  // (phi3), as we do by max_seq_len.
  if (golden["llama_cpp"].contains("n_ctx_seq"))
    source->config.max_seq_len = std::min(source->config.max_seq_len, golden["llama_cpp"]["n_ctx_seq"].get<int32_t>());

  ThreadPool pool(2);
  LlamaModel model(source->config, *weights, pool, 16);
  auto cache = KvCache::create(source->config, 8, 16);
  ASSERT_TRUE(cache.ok());
  const std::vector<int32_t> blocks = {6, 1, 3};  // scattered: positions 0..47
  const std::vector<int32_t> prompt = golden["prompt_ids"].get<std::vector<int32_t>>();
  const std::vector<int32_t> greedy = golden["greedy_ids"].get<std::vector<int32_t>>();
  const nlohmann::json& steps = golden["steps"];
  ASSERT_EQ(steps.size(), greedy.size());
  const bool q8_0 = GetParam().find("q8_0") != std::string::npos;
  const bool gelu = source->config.activation == Activation::kGeluTanh;
  const double tolerance = !q8_0 ? 2e-2 : gelu ? 0.15 : 1e-3;

  std::vector<float> logits(static_cast<size_t>(vocab));
  test::TeacherForcedRun run(model, **cache, blocks, prompt, greedy);
  double worst = 0.0, min_margin = INFINITY;
  for (size_t step = 0; step < steps.size(); ++step) {
    ASSERT_TRUE(run.step(step, logits.data()).ok());
    const std::vector<double> ours = log_softmax(logits.data(), vocab);
    const nlohmann::json& want = steps[step];
    const auto top1 = static_cast<int32_t>(std::max_element(ours.begin(), ours.end()) - ours.begin());
    min_margin = std::min(min_margin, want["margin"].get<double>());
    EXPECT_EQ(top1, want["top1"].get<int32_t>()) << "step " << step << ", llama.cpp's margin "
                                                 << want["margin"].get<double>();
    const auto ids = want["top5_ids"].get<std::vector<int32_t>>();
    const auto logprobs = want["top5_logprobs"].get<std::vector<double>>();
    for (size_t i = 0; i < ids.size(); ++i) {
      const double diff = std::fabs(ours[static_cast<size_t>(ids[i])] - logprobs[i]);
      worst = std::max(worst, diff);
      EXPECT_LE(diff, tolerance) << "step " << step << " id " << ids[i];
    }
  }
  std::printf("%s: worst top-5 |logprob - llama.cpp| = %.3g; top-1 equal on all %zu steps, smallest margin %.3g\n",
              GetParam().c_str(), worst, steps.size(), min_margin);
}

INSTANTIATE_TEST_SUITE_P(Goldens, LlamaCppGgufTest,
                         ::testing::Values("llama-gqa-tied.f16", "llama-gqa-tied.q8_0", "qwen2-bias.f16",
                                           "qwen2-bias.q8_0", "qwen3.f16", "qwen3.q8_0", "gemma2.f16",
                                           "gemma2.q8_0", "gemma3.f16", "gemma3.q8_0", "phi3-longrope-short.f16",
                                           "phi3-longrope-short.q8_0", "phi3-longrope-long.f16",
                                           "phi3-longrope-long.q8_0", "qwen3-moe.f16", "qwen3-moe.q8_0",
                                           "mixtral.f16", "mixtral.q8_0"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-' || c == '.') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace zl
