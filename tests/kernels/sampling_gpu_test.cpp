// Device sampling and stop checks against the CPU Sampler (engine/sampler.h).
// Greedy (with penalties) must pick the same ids; logprobs agree to 1e-4
// absolute. Stochastic sampling is checked by what it may pick (the top-k /
// top-p / min-p set the CPU rules define) and, on a small vocabulary, by its
// frequencies (within 0.03 of the softmax over 4000 draws, ~5 sigma).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "engine/sampler.h"
#include "gpu_test_util.h"
#include "kernels/cpu/argmax.h"
#include "kernels/cuda/sampling.h"

namespace zl {
namespace {

using test::random_floats;
using test::to_device;
using test::to_host;

// Device state for max_slots requests over one vocabulary, one logits row per call.
struct DeviceSampler {
  DeviceSampler(int32_t vocab, int32_t max_slots, std::vector<int32_t> eos) : vocab(vocab) {
    counts = to_device(std::vector<int32_t>(static_cast<size_t>(vocab * max_slots), 0));
    seen = to_device(std::vector<uint8_t>(static_cast<size_t>(vocab * max_slots), 0));
    slots = to_device(std::vector<cuda::SlotState>(static_cast<size_t>(max_slots)));
    eos_ids = to_device(eos.empty() ? std::vector<int32_t>{-1} : eos);
    num_eos = static_cast<int32_t>(eos.size());
  }
  cuda::SampleArgs args(int32_t num_rows) {
    cuda::SampleArgs a;
    a.output_counts = counts.as<int32_t>();
    a.prompt_seen = seen.as<uint8_t>();
    a.slots = slots.as<cuda::SlotState>();
    a.eos_ids = eos_ids.as<int32_t>();
    a.num_eos = num_eos;
    a.num_rows = num_rows;
    a.vocab_size = vocab;
    return a;
  }
  void reset(int32_t slot, const std::vector<int32_t>& prompt) {
    auto d_prompt = to_device(prompt.empty() ? std::vector<int32_t>{0} : prompt);
    cuda::reset_slot(args(0), slot, d_prompt.as<int32_t>(), static_cast<int32_t>(prompt.size()), nullptr);
    CHECK(cuda::synchronize().ok());
  }
  struct Out {
    std::vector<int32_t> tokens, finish;
    std::vector<float> logprobs;
  };
  // logits: [rows, vocab]; params: [rows].
  Out sample(const std::vector<float>& logits, const std::vector<cuda::SampleParams>& params) {
    const int32_t rows = static_cast<int32_t>(params.size());
    auto d_logits = to_device(logits), d_params = to_device(params);
    auto d_work = to_device(std::vector<float>(logits.size()));
    auto d_tokens = test::poisoned<int32_t>(static_cast<size_t>(rows));
    auto d_logprobs = test::poisoned<float>(static_cast<size_t>(rows));
    auto d_finish = test::poisoned<int32_t>(static_cast<size_t>(rows));
    cuda::SampleArgs a = args(rows);
    a.logits = d_logits.as<float>();
    a.work = d_work.as<float>();
    a.params = d_params.as<cuda::SampleParams>();
    a.tokens = d_tokens.as<int32_t>();
    a.logprobs = d_logprobs.as<float>();
    a.finish = d_finish.as<int32_t>();
    cuda::sample(a, nullptr);
    CHECK(cuda::check_launch("sample").ok());
    return {to_host<int32_t>(d_tokens, rows), to_host<int32_t>(d_finish, rows), to_host<float>(d_logprobs, rows)};
  }
  int32_t vocab, num_eos = 0;
  cuda::DeviceBuffer counts, seen, slots, eos_ids;
};

// argmax_rows against cpu::argmax_f32 on rows that test the rules: random
// values, a tie (lowest id wins), NaNs around the maximum, all NaN (0), all
// -inf (0), the maximum at the last id, and a row longer than the block.
TEST(CudaSampling, ArgmaxRowsMatchesCpu) {
  ZL_REQUIRE_CUDA_DEVICE();
  const int32_t vocab = 128256, rows = 7;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (float& v : logits) v = normal(rng);
  auto row = [&](int32_t r) { return logits.begin() + int64_t{r} * vocab; };
  row(1)[500] = 100.0f, row(1)[90000] = 100.0f;  // tie
  row(2)[7] = NAN, row(2)[8] = 50.0f, row(2)[9] = NAN;
  std::fill(row(3), row(3) + vocab, NAN);
  std::fill(row(4), row(4) + vocab, -INFINITY);
  row(5)[vocab - 1] = 99.0f;
  auto d_logits = to_device(logits);
  auto d_out = test::poisoned<int32_t>(rows);
  cuda::argmax_rows(d_logits.as<float>(), rows, vocab, d_out.as<int32_t>(), nullptr);
  ASSERT_TRUE(cuda::check_launch("argmax_rows").ok());
  std::vector<int32_t> got = to_host<int32_t>(d_out, rows);
  for (int32_t r = 0; r < rows; ++r) EXPECT_EQ(got[r], cpu::argmax_f32(&*row(r), vocab)) << "row " << r;
  EXPECT_EQ(got[1], 500);
  EXPECT_EQ(got[3], 0);
}

TEST(CudaSampling, GreedyWithPenaltiesMatchesCpuSampler) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(9);
  const int32_t vocab = 32003;  // not a multiple of the block size
  DeviceSampler device(vocab, 4, {});
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.7f;
  p.return_logprob = true;
  Sampler cpu(p, vocab);
  std::vector<int32_t> prompt = {5, 17, 17, 900, 32002};
  cpu.set_prompt(prompt);
  device.reset(2, prompt);
  cuda::SampleParams dp;
  dp.temperature = 0.0f;
  dp.repetition_penalty = p.repetition_penalty;
  dp.presence_penalty = p.presence_penalty;
  dp.frequency_penalty = p.frequency_penalty;
  dp.slot = 2;
  // Logits that favour a few ids, so penalties decide between them.
  for (int step = 0; step < 40; ++step) {
    std::vector<float> logits = random_floats(static_cast<size_t>(vocab), rng);
    for (int32_t id : {5, 17, 900, 32002, 1234}) logits[static_cast<size_t>(id)] += 6.0f;
    auto out = device.sample(logits, {dp});
    SampleResult ref = cpu.sample(logits.data());
    ASSERT_EQ(out.tokens[0], ref.token) << "step " << step;
    EXPECT_NEAR(out.logprobs[0], ref.logprob, 1e-4);
    EXPECT_EQ(out.finish[0], cuda::kSampleRunning);
  }
}

TEST(CudaSampling, DrawsOnlyFromTheTopKTopPMinPSet) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(10);
  const int32_t vocab = 1000;
  DeviceSampler device(vocab, 1, {});
  device.reset(0, {});
  for (int trial = 0; trial < 60; ++trial) {
    cuda::SampleParams dp;
    dp.slot = 0;
    dp.temperature = 0.7f;
    dp.top_k = trial % 3 == 0 ? 0 : 1 + trial % 11;
    dp.top_p = trial % 2 == 0 ? 1.0f : 0.8f;
    dp.min_p = trial % 5 == 0 ? 0.1f : 0.0f;
    dp.seed_lo = static_cast<uint32_t>(trial);
    std::vector<float> logits = random_floats(static_cast<size_t>(vocab), rng, 2.0f);
    // The allowed set by the CPU rules: sort descending, top-k, top-p prefix, min-p.
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    int32_t keep = dp.top_k > 0 ? dp.top_k : vocab;
    std::vector<double> probs;
    double total = 0.0;
    for (int32_t i = 0; i < keep; ++i) {
      probs.push_back(std::exp((logits[order[i]] - logits[order[0]]) / dp.temperature));
      total += probs.back();
    }
    double cumulative = 0.0;
    for (int32_t i = 0; i < keep && dp.top_p < 1.0f; ++i) {
      cumulative += probs[i] / total;
      if (cumulative >= dp.top_p) keep = i + 1;
    }
    while (keep > 1 && probs[keep - 1] < dp.min_p) --keep;
    std::vector<int32_t> allowed(order.begin(), order.begin() + keep);
    auto out = device.sample(logits, {dp});
    EXPECT_NE(std::find(allowed.begin(), allowed.end(), out.tokens[0]), allowed.end())
        << "trial " << trial << " picked " << out.tokens[0] << " outside " << keep << " allowed ids";
  }
}

TEST(CudaSampling, FrequenciesFollowTheSoftmax) {
  ZL_REQUIRE_CUDA_DEVICE();
  const std::vector<float> logits = {1.0f, 0.0f, 2.0f, -1.0f, 0.5f, 1.5f};
  const int32_t vocab = static_cast<int32_t>(logits.size()), draws = 4000, batch = 200;
  DeviceSampler device(vocab, batch, {});
  std::vector<int32_t> hits(static_cast<size_t>(vocab), 0);
  std::vector<cuda::SampleParams> params(static_cast<size_t>(batch));
  std::vector<float> rows;
  for (int32_t r = 0; r < batch; ++r) {
    device.reset(r, {});
    params[r].slot = r;
    params[r].seed_lo = static_cast<uint32_t>(r * 7919);
    rows.insert(rows.end(), logits.begin(), logits.end());
  }
  for (int32_t round = 0; round < draws / batch; ++round)
    for (int32_t token : device.sample(rows, params).tokens) hits[static_cast<size_t>(token)] += 1;
  double norm = 0.0;
  for (float l : logits) norm += std::exp(l);
  for (int32_t i = 0; i < vocab; ++i)
    EXPECT_NEAR(hits[i] / double{draws}, std::exp(logits[i]) / norm, 0.03) << "id " << i;
}

TEST(CudaSampling, SameSeedSameTokens) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  const int32_t vocab = 5000;
  DeviceSampler device(vocab, 2, {});
  device.reset(0, {});
  device.reset(1, {});
  cuda::SampleParams a, b;
  a.slot = 0;
  b.slot = 1;
  a.seed_lo = b.seed_lo = 1234;
  a.seed_hi = b.seed_hi = 5;
  a.top_p = b.top_p = 0.95f;
  int32_t differing_steps = 0, last = -1;
  for (int step = 0; step < 20; ++step) {
    std::vector<float> logits = random_floats(static_cast<size_t>(vocab), rng);
    std::vector<float> both = logits;
    both.insert(both.end(), logits.begin(), logits.end());
    auto out = device.sample(both, {a, b});
    EXPECT_EQ(out.tokens[0], out.tokens[1]) << "step " << step;
    differing_steps += out.tokens[0] != last;
    last = out.tokens[0];
  }
  EXPECT_GT(differing_steps, 10);  // the draw advances with each token
}

TEST(CudaSampling, StopChecksWriteTheRequestState) {
  ZL_REQUIRE_CUDA_DEVICE();
  const int32_t vocab = 300;
  DeviceSampler device(vocab, 4, {7, 299});
  for (int32_t slot = 0; slot < 4; ++slot) device.reset(slot, {});
  std::vector<float> eos_row(vocab, 0.0f), flat_row(vocab, 0.0f), peaked(vocab, 0.0f);
  eos_row[299] = 50.0f;
  peaked[3] = 50.0f;
  cuda::SampleParams eos, length, min_prob, padding;
  eos.slot = 0;
  eos.temperature = 0.0f;
  length.slot = 1;
  length.temperature = 0.0f;
  length.max_new_tokens = 3;
  min_prob.slot = 2;
  min_prob.min_token_prob = 0.5f;  // a flat row gives each id 1/300
  std::vector<float> rows = eos_row;
  rows.insert(rows.end(), peaked.begin(), peaked.end());
  rows.insert(rows.end(), flat_row.begin(), flat_row.end());
  rows.insert(rows.end(), flat_row.begin(), flat_row.end());
  auto out = device.sample(rows, {eos, length, min_prob, padding});
  EXPECT_EQ(out.tokens[0], 299);
  EXPECT_EQ(out.finish[0], cuda::kSampleEos);
  EXPECT_EQ(out.tokens[1], 3);
  EXPECT_EQ(out.finish[1], cuda::kSampleRunning);
  EXPECT_EQ(out.finish[2], cuda::kSampleMinProb);
  EXPECT_NEAR(out.logprobs[2], -std::log(300.0f), 1e-4);
  EXPECT_EQ(out.tokens[3], -1);  // padding row
  // The length limit hits on the third generated token; the eos state stays.
  out = device.sample(rows, {eos, length, min_prob, padding});
  EXPECT_EQ(out.finish[1], cuda::kSampleRunning);
  out = device.sample(rows, {eos, length, min_prob, padding});
  EXPECT_EQ(out.finish[1], cuda::kSampleLength);
  EXPECT_EQ(out.finish[0], cuda::kSampleEos);
  // ignore_eos: the eos id is sampled but does not finish.
  device.reset(0, {});
  eos.ignore_eos = 1;
  out = device.sample(rows, {eos, length, min_prob, padding});
  EXPECT_EQ(out.tokens[0], 299);
  EXPECT_EQ(out.finish[0], cuda::kSampleRunning);
}

}  // namespace
}  // namespace zl
