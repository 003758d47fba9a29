// Batch invariance: N concurrent greedy requests (mixed prompt and output
// lengths) produce exactly the tokens each produces alone, under every cache
// policy, on dummy:tiny and on the real stories260K model (each alone on an
// engine without overlap scheduling; together with it).
// Also: overlap scheduling changes no token, and priorities order admission.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "batch_cases.h"
#include "collecting_sink.h"
#include "test_util.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

using test::Case;
using test::make_cases;
using test::make_engine;
using test::run_all;

class BatchInvarianceTest : public ::testing::TestWithParam<std::tuple<std::string, CachePolicy>> {};

TEST_P(BatchInvarianceTest, ConcurrentEqualsAlone) {
  auto [model, policy] = GetParam();
  if (model.rfind("dummy:", 0) != 0) {
    model = test::shared_path(model);
    if (model.empty()) GTEST_SKIP() << "../shared is missing";
  }
  const int32_t vocab = model.rfind("dummy:", 0) == 0 ? 512 : 512;
  std::vector<Case> cases = make_cases(64, vocab, 80, 1234);
  auto alone_engine = make_engine(model, policy, 1, 32, 16 << 20, {}, /*overlap=*/false);
  ASSERT_NE(alone_engine, nullptr);
  std::vector<std::vector<int32_t>> alone;
  for (size_t i = 0; i < cases.size(); ++i) alone.push_back(run_all(*alone_engine, cases, i, 1)[0]);
  alone_engine.reset();

  auto batch_engine = make_engine(model, policy, 64, 48);
  ASSERT_NE(batch_engine, nullptr);
  for (size_t n : {2u, 8u, 64u}) {
    std::vector<std::vector<int32_t>> together = run_all(*batch_engine, cases, 0, n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(together[i], alone[i]) << "request " << i << " of " << n;
  }
  EngineStats stats = batch_engine->stats();
  EXPECT_GT(stats.batch_size_mean, 2.0);
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  if (policy == CachePolicy::kContiguous) {
    EXPECT_EQ(stats.num_preemptions, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, BatchInvarianceTest,
    ::testing::Combine(::testing::Values("dummy:tiny", "models/stories260K.gguf"),
                       ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid)),
    test::model_policy_name);

// A contiguous pool too small for its load fragments; compaction slides the
// running extents together (copying their KV) and nothing changes in the
// output. Under overlap the passes never wait for it: each step copies a
// slice (here at most one block, or the rest of one extent, or all at once
// with 0), before its pass, while the pass before may still run.
class CompactionTest : public ::testing::TestWithParam<std::tuple<bool, int64_t>> {};

TEST_P(CompactionTest, TightContiguousPoolCompactsWithoutChangingOutputs) {
  const auto [overlap, slice_bytes] = GetParam();
  std::vector<Case> cases = make_cases(48, 512, 80, 99);
  auto alone_engine = make_engine("dummy:tiny", CachePolicy::kContiguous, 1, 32);
  ASSERT_NE(alone_engine, nullptr);
  std::vector<std::vector<int32_t>> alone;
  for (size_t i = 0; i < cases.size(); ++i) alone.push_back(run_all(*alone_engine, cases, i, 1)[0]);
  alone_engine.reset();
  // dummy:tiny holds 1 KiB of KV per token (f16): 800 tokens, 100 blocks of 8.
  auto tight = make_engine("dummy:tiny", CachePolicy::kContiguous, 16, 48, 800 * 1024, {}, overlap, slice_bytes);
  ASSERT_NE(tight, nullptr);
  std::vector<std::vector<int32_t>> together = run_all(*tight, cases, 0, cases.size());
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(together[i], alone[i]) << "request " << i;
  EngineStats stats = tight->stats();
  EXPECT_GT(stats.kv.num_compactions, 0);
  EXPECT_EQ(stats.num_preemptions, 0);
  EXPECT_EQ(stats.num_drains, 0) << "no pass waited for compaction";
  EXPECT_GT(stats.compaction_copy_ns_total, 0) << "the passes copied the moved blocks";
  if (overlap) {
    EXPECT_GT(stats.num_overlapped_passes, 0);
  }
  // A one-block slice goes past its bound by the rest of one extent at most
  // (80 + 40 tokens: 15 blocks).
  if (slice_bytes > 0) {
    EXPECT_LE(stats.kv.max_block_moves, 1 + 15);
  }
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  RecordProperty("compactions", static_cast<int>(stats.kv.num_compactions));
  RecordProperty("block_moves", static_cast<int>(stats.kv.num_block_moves));
  RecordProperty("max_block_moves", stats.kv.max_block_moves);
}

INSTANTIATE_TEST_SUITE_P(OverlapAndSlice, CompactionTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(int64_t{0}, int64_t{8 * 1024})),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Overlap" : "Sync") +
                                  (std::get<1>(info.param) > 0 ? "OneBlockSlices" : "WholeCompactions");
                         });

using Sinks = std::vector<std::shared_ptr<test::CollectingSink>>;

// One request per case (`shape` sets its sampling and stops) on a fresh
// dummy:tiny engine, contiguous, with or without overlap; waits for every
// terminal event. Returns the sinks; *stats is the engine's afterwards.
Sinks run_cases(const std::vector<Case>& cases, int max_num_seqs, int budget, bool overlap,
                const std::function<void(size_t, Request&)>& shape, EngineStats* stats) {
  Sinks sinks;
  auto engine = make_engine("dummy:tiny", CachePolicy::kContiguous, max_num_seqs, budget, 16 << 20, {}, overlap);
  if (engine == nullptr) return sinks;
  for (size_t i = 0; i < cases.size(); ++i) {
    auto sink = std::make_shared<test::CollectingSink>();
    Request r;
    r.prompt_ids = cases[i].prompt;
    r.max_new_tokens = cases[i].max_new;
    shape(i, r);
    r.sink = sink;
    EXPECT_TRUE(engine->submit(std::move(r)).ok());
    sinks.push_back(sink);
  }
  for (auto& sink : sinks) {
    EXPECT_TRUE(sink->wait());
    EXPECT_EQ(sink->num_finish_events, 1);
  }
  *stats = engine->stats();
  return sinks;
}

// Overlap scheduling changes when the engine plans and samples, never what is
// computed: greedy and seeded sampled requests, many stopped early by a stop
// token (their row in the pass already queued is computed and dropped), get
// the same tokens and finish reasons as without it, and every block returns.
TEST(OverlapTest, SameTokensAndFinishesAsWithout) {
  const std::vector<Case> cases = make_cases(48, 512, 40, 7);
  auto shape = [](size_t i, Request& r) {
    r.sampling.temperature = i % 3 == 2 ? 0.8f : 0.0f;
    r.sampling.has_seed = true;
    r.sampling.seed = i;
    for (int32_t t = 3; t < 512; t += 23) r.stop_token_ids.push_back(t);  // ~4% of tokens stop
  };
  EngineStats sync_stats, overlap_stats;
  const Sinks sync = run_cases(cases, 64, 48, false, shape, &sync_stats);
  const Sinks overlapped = run_cases(cases, 64, 48, true, shape, &overlap_stats);
  ASSERT_EQ(sync.size(), cases.size());
  ASSERT_EQ(overlapped.size(), cases.size());
  int stopped = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(overlapped[i]->tokens, sync[i]->tokens) << "request " << i;
    EXPECT_EQ(overlapped[i]->finish.reason, sync[i]->finish.reason) << "request " << i;
    stopped += sync[i]->finish.reason == FinishReason::kStop;
  }
  EXPECT_GT(stopped, 4);
  EXPECT_EQ(sync_stats.num_overlapped_passes, 0);
  EXPECT_GT(overlap_stats.num_overlapped_passes, 0);
  EXPECT_EQ(overlap_stats.kv.num_used_blocks, 0);
  EXPECT_EQ(sync_stats.kv.num_used_blocks, 0);
  RecordProperty("stopped", stopped);
  RecordProperty("overlapped_passes", static_cast<int>(overlap_stats.num_overlapped_passes));
}

// Sampled rows overlap too: the runner draws their tokens right after their
// pass, and the pass queued behind starts on them. Every request samples
// (temperature, top-p, penalties, logprobs with alternatives), so before
// sampling moved onto the runner no pass overlapped; the draws, logprobs and
// finishes are those of the engine without overlap.
TEST(OverlapTest, SampledPassesOverlapWithTheSameDraws) {
  const std::vector<Case> cases = make_cases(32, 512, 24, 11);
  auto shape = [](size_t i, Request& r) {
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.95f;
    r.sampling.presence_penalty = 0.5f;
    r.sampling.frequency_penalty = 0.25f;
    r.sampling.repetition_penalty = 1.1f;
    r.sampling.has_seed = true;
    r.sampling.seed = 1000 + i;
    r.sampling.num_top_logprobs = static_cast<int32_t>(i % 4);
    r.sampling.return_logprob = true;
    for (int32_t t = 5; t < 512; t += 37) r.stop_token_ids.push_back(t);
  };
  EngineStats sync_stats, overlap_stats;
  const Sinks sync = run_cases(cases, 32, 64, false, shape, &sync_stats);
  const Sinks overlapped = run_cases(cases, 32, 64, true, shape, &overlap_stats);
  ASSERT_EQ(sync.size(), cases.size());
  ASSERT_EQ(overlapped.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const test::CollectingSink& a = *overlapped[i];
    const test::CollectingSink& b = *sync[i];
    EXPECT_EQ(a.tokens, b.tokens) << "request " << i;
    EXPECT_EQ(a.logprobs, b.logprobs) << "request " << i;
    EXPECT_EQ(a.finish.reason, b.finish.reason) << "request " << i;
    ASSERT_EQ(a.top_logprobs.size(), b.top_logprobs.size()) << "request " << i;
    for (size_t t = 0; t < b.top_logprobs.size(); ++t) {
      ASSERT_EQ(b.top_logprobs[t].size(), i % 4) << "request " << i << " token " << t;
      ASSERT_EQ(a.top_logprobs[t].size(), i % 4) << "request " << i << " token " << t;
      for (size_t k = 0; k < b.top_logprobs[t].size(); ++k) {
        EXPECT_EQ(a.top_logprobs[t][k].id, b.top_logprobs[t][k].id);
        EXPECT_EQ(a.top_logprobs[t][k].logprob, b.top_logprobs[t][k].logprob);
      }
    }
  }
  EXPECT_EQ(sync_stats.num_overlapped_passes, 0);
  EXPECT_GT(overlap_stats.num_overlapped_passes, overlap_stats.num_steps / 4);
  EXPECT_EQ(overlap_stats.kv.num_used_blocks, 0);
  RecordProperty("overlapped_passes", static_cast<int>(overlap_stats.num_overlapped_passes));
  RecordProperty("steps", static_cast<int>(overlap_stats.num_steps));
}

TEST(PriorityTest, HigherPriorityIsAdmittedFirst) {
  auto engine = make_engine("dummy:tiny", CachePolicy::kContiguous, 1, 64);
  ASSERT_NE(engine, nullptr);
  // The first request occupies the only slot while the others queue.
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  std::vector<int32_t> order;
  std::mutex order_mutex;
  struct OrderSink : test::CollectingSink {
    int tag;
    std::vector<int32_t>* order;
    std::mutex* mutex;
    void on_finish(const FinishEvent& e) override {
      {
        std::lock_guard<std::mutex> lock(*mutex);
        order->push_back(tag);
      }
      test::CollectingSink::on_finish(e);
    }
  };
  const int priorities[] = {0, 1, 5, 1, 9};
  for (int i = 0; i < 5; ++i) {
    auto sink = std::make_shared<OrderSink>();
    sink->tag = i;
    sink->order = &order;
    sink->mutex = &order_mutex;
    Request r;
    r.prompt_ids = {1, 2, 3};
    r.max_new_tokens = i == 0 ? 200 : 2;
    r.ignore_eos = true;
    r.priority = priorities[i];
    r.sink = sink;
    ASSERT_TRUE(engine->submit(std::move(r)).ok());
    sinks.push_back(sink);
    // Let the first request start before the others arrive.
    while (i == 0 && engine->stats().num_running == 0) std::this_thread::yield();
  }
  for (auto& s : sinks) ASSERT_TRUE(s->wait());
  // 0 was running first; then 4 (9), 2 (5), 1 and 3 (1, in arrival order).
  EXPECT_EQ(order, (std::vector<int32_t>{0, 4, 2, 1, 3}));
}

}  // namespace
}  // namespace zl
