// Nothing is lost: a seeded random mix of >= 10,000 operations (submit,
// abort in every state, steps that finish requests, memory pressure from a
// small KV pool, preemption under paged) driven through EngineCore on one
// thread, checking the pool's invariants after every operation. At the end
// every block is free or cached, no refcount is held, and every accepted
// request got exactly one terminal event. Under contiguous no request is
// preempted or fails after admission, and compaction goes a block (or the
// rest of an extent) a step, so its slices interleave with all the rest,
// passes in flight included. Half the requests sample. Each policy
// runs twice: with overlap scheduling (aborts then also land while a pass
// runs and another is planned past it; under paged and hybrid a decode that
// finds no block waits for the running pass before anyone is preempted) and
// without; and once more with overlap and prefill first (passes of prompts
// alone while decoders wait).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine_core.h"
#include "tiny_model.h"

namespace zl {
namespace {

struct CountingSink : EventSink {
  int tokens = 0;
  int finishes = 0;
  FinishReason reason = FinishReason::kLength;
  void on_token(const TokenEvent&) override { tokens++; }
  void on_finish(const FinishEvent& e) override {
    finishes++;
    reason = e.reason;
  }
};

class EngineCoreRandomTest : public ::testing::TestWithParam<std::tuple<CachePolicy, bool, bool>> {};

TEST_P(EngineCoreRandomTest, TenThousandOperationsLoseNothing) {
  EngineConfig config;
  config.max_num_seqs = 16;
  config.max_num_batched_tokens = 64;
  const CachePolicy policy = std::get<0>(GetParam());
  config.cache_policy = policy;
  config.overlap_scheduling = std::get<1>(GetParam());
  // Steps take microseconds here: 1 ms lets decoders wait many passes.
  config.prefill_first_ms = std::get<2>(GetParam()) ? 1 : 0;
  config.compaction_bytes_per_step = 1;  // one block a slice
  test::TinyModel tiny(config.max_num_batched_tokens, 24, 8);  // 192 tokens: constant pressure
  EngineCore core(config, tiny.model, *tiny.cache, {257});
  const Tokenizer& tokenizer = *tiny.source.tokenizer;

  std::mt19937 rng(2024);
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };
  std::vector<std::vector<int32_t>> prefixes(4);
  for (auto& p : prefixes)
    for (int i = 0; i < 24; ++i) p.push_back(uniform(3, 255));
  const BlockSignature salts[] = {make_cache_salt(1, ""), make_cache_salt(1, "tenant-b")};

  std::map<RequestId, std::shared_ptr<CountingSink>> sinks;
  RequestId next_id = 1;
  int num_ops = 0;
  for (; num_ops < 10000; ++num_ops) {
    int op = uniform(0, 99);
    if (op < 20) {
      auto sink = std::make_shared<CountingSink>();
      Request r;
      r.sink = sink;
      r.max_new_tokens = uniform(1, 16);
      r.sampling.temperature = uniform(0, 1) ? 0.0f : 0.9f;
      r.sampling.has_seed = true;
      r.sampling.seed = rng();
      r.priority = uniform(0, 2);
      if (uniform(0, 9) == 0) r.stop = {"\x05"};
      if (uniform(0, 19) == 0) r.min_token_prob = 0.01f;
      std::vector<int32_t> prompt = prefixes[static_cast<size_t>(uniform(0, 3))];
      prompt.resize(static_cast<size_t>(uniform(1, 24)));
      for (int i = uniform(0, 16); i > 0; --i) prompt.push_back(uniform(3, 255));
      int32_t max_total = static_cast<int32_t>(prompt.size()) + r.max_new_tokens;
      if (static_cast<int32_t>(prompt.size()) >= max_total) continue;
      auto seq = std::make_unique<Sequence>(next_id, std::move(r), std::move(prompt), max_total, 512, tokenizer,
                                            salts[uniform(0, 1)]);
      seq->submitted_at = Clock::now();
      sinks[next_id++] = sink;
      core.enqueue(std::move(seq));
    } else if (op < 32) {
      if (next_id > 1) core.abort(static_cast<RequestId>(uniform(1, static_cast<int>(next_id))));
    } else {
      core.step();
    }
    std::vector<const SeqBlocks*> live = core.live_blocks();
    Status s = core.pool().check_invariants(live);
    ASSERT_TRUE(s.ok()) << "after op " << num_ops << ": " << s.to_string();
  }
  while (core.has_work()) core.step();
  ASSERT_TRUE(core.pool().check_invariants({}).ok());

  EngineStats stats = core.stats();
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  EXPECT_EQ(stats.kv.num_free_blocks + stats.kv.num_cached_blocks, stats.kv.num_blocks);
  int errors = 0;
  for (auto& [id, sink] : sinks) {
    EXPECT_EQ(sink->finishes, 1) << "request " << id;
    errors += sink->reason == FinishReason::kError;
  }
  EXPECT_EQ(errors, 0);
  EXPECT_GT(stats.kv.prefix_hit_tokens, 0);
  EXPECT_EQ(stats.num_overlapped_passes > 0, config.overlap_scheduling);
  EXPECT_EQ(stats.num_prompt_passes > 0, config.prefill_first_ms > 0);
  if (policy == CachePolicy::kContiguous) {
    EXPECT_EQ(stats.num_preemptions, 0);
    EXPECT_GT(stats.kv.num_compactions, 0);
    EXPECT_EQ(stats.num_drains, 0) << "nothing waits for a pass under contiguous";
  } else if (policy == CachePolicy::kPaged) {
    EXPECT_GT(stats.num_preemptions, 0) << "the pool was meant to force preemption";
  }
  RecordProperty("requests", static_cast<int>(sinks.size()));
  RecordProperty("preemptions", static_cast<int>(stats.num_preemptions));
  RecordProperty("compactions", static_cast<int>(stats.kv.num_compactions));
  RecordProperty("max_block_moves", stats.kv.max_block_moves);
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<CachePolicy, bool, bool>>& info) {
  return std::string(cache_policy_name(std::get<0>(info.param))) + (std::get<1>(info.param) ? "_overlap" : "") +
         (std::get<2>(info.param) ? "_prefill_first" : "");
}

const auto kPolicies = ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid);
INSTANTIATE_TEST_SUITE_P(Policies, EngineCoreRandomTest,
                         ::testing::Combine(kPolicies, ::testing::Bool(), ::testing::Values(false)), param_name);
INSTANTIATE_TEST_SUITE_P(PrefillFirst, EngineCoreRandomTest,
                         ::testing::Combine(kPolicies, ::testing::Values(true), ::testing::Values(true)), param_name);

}  // namespace
}  // namespace zl
