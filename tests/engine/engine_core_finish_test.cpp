// A finish event means the request's KV memory is back in the pool, even
// when the output ring fills mid-step and the records so far are delivered
// then: finish records of sequences that held blocks are pushed only after
// those blocks are released (reap_finished), never where the finish is
// decided.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine_core.h"
#include "tiny_model.h"

namespace zl {
namespace {

// Records how many KV blocks are in use whenever a finish is delivered
// (inline, on the engine thread, so the pool can be read there).
struct UsedBlocksAtFinish : EventSink {
  const EngineCore* core = nullptr;
  std::vector<int32_t> used;
  void on_token(const TokenEvent&) override {}
  void on_finish(const FinishEvent&) override { used.push_back(core->pool().stats().num_used_blocks); }
};

TEST(EngineCoreFinishTest, AFinishDeliveredWhenTheRingFillsFindsItsBlocksFree) {
  EngineConfig config;
  config.max_num_seqs = 4;
  config.max_num_batched_tokens = 32;
  config.overlap_scheduling = false;
  test::TinyModel tiny(config.max_num_batched_tokens, 16, 8);
  // Two records fit: the first finishing request's last token and finish
  // fill the ring, so the next request's token delivers them mid-step.
  OutputStage stage([](RequestId) {}, 2);
  EngineCore core(config, tiny.model, *tiny.cache, {}, &stage);
  auto sink = std::make_shared<UsedBlocksAtFinish>();
  sink->core = &core;
  for (RequestId id = 1; id <= 3; ++id) {
    Request r;
    r.sink = sink;
    r.max_new_tokens = 3;
    r.sampling.temperature = 0.0f;
    std::vector<int32_t> prompt = {1, static_cast<int32_t>(10 + id), 20, 30};
    auto seq = std::make_unique<Sequence>(id, std::move(r), std::move(prompt), 7, tiny.source.config.vocab_size,
                                          *tiny.source.tokenizer, make_cache_salt(1, ""));
    seq->submitted_at = Clock::now();
    core.enqueue(std::move(seq));
  }
  while (core.has_work()) core.step();
  // All three finish in the same step, and each finish comes after every block is free.
  ASSERT_EQ(sink->used.size(), 3u);
  for (int32_t used : sink->used) EXPECT_EQ(used, 0);
}

}  // namespace
}  // namespace zl
