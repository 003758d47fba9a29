// The batched forward call: several sequences in one flat batch (a prefill
// chunk beside decode tokens, each with its own block table) must give the
// same logits as running each sequence alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "bundle/model_loader.h"
#include "model/llama.h"

namespace zl {
namespace {

class BatchedForwardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto source = open_model("dummy:tiny");
    ASSERT_TRUE(source.ok());
    config_ = source->config;
    auto weights = load_model_weights(*source);
    ASSERT_TRUE(weights.ok());
    weights_ = std::move(*weights);
  }
  ModelConfig config_;
  ModelWeights weights_;
};

TEST_F(BatchedForwardTest, MixedBatchEqualsSeparateRuns) {
  ThreadPool pool(2);
  LlamaModel model(config_, weights_, pool, 64);
  const int32_t vocab = config_.vocab_size;
  std::vector<int32_t> a = {256, 10, 20, 30, 40, 50, 60, 70, 80, 90};  // 10 tokens
  std::vector<int32_t> b = {256, 5, 6, 7};                              // 4 tokens
  std::vector<int32_t> blocks_a = {3, 1}, blocks_b = {0};

  // Alone: a's first 9 tokens, then its 10th; b's first 3, then its 4th.
  auto alone = [&](const std::vector<int32_t>& seq, const std::vector<int32_t>& blocks) {
    auto cache = KvCache::create(config_, 4, 8);
    std::vector<float> logits(static_cast<size_t>(vocab));
    int32_t n = static_cast<int32_t>(seq.size());
    SeqChunk prefill{0, n - 1, 0, blocks};
    int32_t row = n - 2;
    EXPECT_TRUE(model.forward({std::span(seq).first(n - 1), {&prefill, 1}, {&row, 1}}, **cache, logits.data()).ok());
    SeqChunk step{0, 1, n - 1, blocks};
    int32_t zero = 0;
    EXPECT_TRUE(model.forward({std::span(seq).last(1), {&step, 1}, {&zero, 1}}, **cache, logits.data()).ok());
    return logits;
  };
  std::vector<float> want_a = alone(a, blocks_a), want_b = alone(b, blocks_b);

  // Together: first a's 9-token prefill beside b's 3-token prefill, then one
  // decode token each, in one batch of two chunks.
  auto cache = KvCache::create(config_, 4, 8);
  std::vector<float> logits(2 * static_cast<size_t>(vocab));
  std::vector<int32_t> first(a.begin(), a.end() - 1);
  first.insert(first.end(), b.begin(), b.end() - 1);
  SeqChunk chunks[] = {{0, 9, 0, blocks_a}, {9, 3, 0, blocks_b}};
  int32_t rows[] = {8, 11};
  ASSERT_TRUE(model.forward({first, chunks, rows}, **cache, logits.data()).ok());
  std::vector<int32_t> second = {a.back(), b.back()};
  SeqChunk steps[] = {{0, 1, 9, blocks_a}, {1, 1, 3, blocks_b}};
  int32_t both[] = {0, 1};
  ASSERT_TRUE(model.forward({second, steps, both}, **cache, logits.data()).ok());
  for (int32_t i = 0; i < vocab; ++i) {
    EXPECT_NEAR(logits[static_cast<size_t>(i)], want_a[static_cast<size_t>(i)], 1e-4f) << i;
    EXPECT_NEAR(logits[static_cast<size_t>(vocab + i)], want_b[static_cast<size_t>(i)], 1e-4f) << i;
  }
}

TEST_F(BatchedForwardTest, RejectsBadBatches) {
  ThreadPool pool(1);
  LlamaModel model(config_, weights_, pool, 8);
  auto cache = KvCache::create(config_, 2, 4);
  std::vector<float> logits(static_cast<size_t>(config_.vocab_size));
  std::vector<int32_t> blocks = {0, 1};
  int32_t row = 0;
  std::vector<int32_t> bad_id = {config_.vocab_size};
  SeqChunk one{0, 1, 0, blocks};
  Status s = model.forward({bad_id, {&one, 1}, {&row, 1}}, **cache, logits.data());
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();

  std::vector<int32_t> ok_id = {1};
  SeqChunk past_blocks{0, 1, 8, blocks};  // position 8 needs a third block
  EXPECT_FALSE(model.forward({ok_id, {&past_blocks, 1}, {&row, 1}}, **cache, logits.data()).ok());
  SeqChunk past_context{0, 1, config_.max_seq_len, blocks};
  s = model.forward({ok_id, {&past_context, 1}, {&row, 1}}, **cache, logits.data());
  EXPECT_NE(s.message().find("context"), std::string::npos) << s.message();
  std::vector<int32_t> too_many(9, 1);
  SeqChunk nine{0, 9, 0, blocks};
  EXPECT_FALSE(model.forward({too_many, {&nine, 1}, {&row, 1}}, **cache, logits.data()).ok());
}

TEST(DummyModelTest, SameNameAndSeedSameWeights) {
  auto a = open_model("dummy:tiny"), b = open_model("dummy:tiny"), c = open_model("dummy:tiny:7");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto wa = load_model_weights(*a), wb = load_model_weights(*b), wc = load_model_weights(*c);
  int64_t n = int64_t{a->config.vocab_size} * a->config.dim;
  const float* ea = wa->tok_embeddings.f32();
  EXPECT_TRUE(std::equal(ea, ea + n, wb->tok_embeddings.f32()));
  EXPECT_FALSE(std::equal(ea, ea + n, wc->tok_embeddings.f32()));
  // Known values pin the generator across machines and compilers.
  EXPECT_FLOAT_EQ(ea[0], 0.0478002429f);
  EXPECT_FLOAT_EQ(wa->layers[3].w_down.f32()[100], 0.080838047f);
  EXPECT_FALSE(open_model("dummy:nope").ok());
  EXPECT_FALSE(open_model("dummy:tiny:x").ok());
}

}  // namespace
}  // namespace zl
