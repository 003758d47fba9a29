// The engine publishing into a stats region (heap memory here; a shared
// segment in serve): each finished request's record has phases that add up
// to its whole time, queue time is zero while capacity remains and not when
// a request waits for a slot, and counters, histograms and the signature
// table reach the region.
#include "engine/stats_publisher.h"

#include <gtest/gtest.h>

#include <vector>

#include "collecting_sink.h"
#include "transport/stats_reader.h"
#include "zerolayer/engine.h"
#include "zerolayer/shm_protocol.h"

namespace zl {
namespace {

std::unique_ptr<Engine> make_engine(int max_num_seqs) {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 1;
  config.max_num_seqs = max_num_seqs;
  config.max_num_batched_tokens = 64;
  config.kv_cache_bytes = 8 << 20;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return std::move(*engine);
}

class StatsPublisherTest : public ::testing::Test {
 protected:
  // Runs `prompts` concurrently (greedy, max_new tokens each), then detaches
  // (the engine publishes a last time) and reads the region.
  StatsSnapshot run(int max_num_seqs, const std::vector<std::vector<int32_t>>& prompts, int max_new) {
    auto engine = make_engine(max_num_seqs);
    Status attached = engine->attach_stats_region(memory_.data(), memory_.size() * sizeof(uint64_t));
    EXPECT_TRUE(attached.ok()) << attached.message();
    std::vector<std::shared_ptr<test::CollectingSink>> sinks;
    for (const auto& prompt : prompts) {
      Request r;
      r.prompt_ids = prompt;
      r.max_new_tokens = max_new;
      r.ignore_eos = true;
      r.sampling.temperature = 0.0f;
      r.origin = RequestOrigin{Transport::kShm, 1000 + sinks.size(), 0};
      r.sink = sinks.emplace_back(std::make_shared<test::CollectingSink>());
      EXPECT_TRUE(engine->submit(std::move(r)).ok());
    }
    for (auto& sink : sinks) EXPECT_TRUE(sink->wait(30));
    engine->detach_stats_region(memory_.data());
    EXPECT_TRUE(check_stats_region(memory_.data(), memory_.size() * sizeof(uint64_t)).ok());
    auto snapshot = read_stats_region(memory_.data());
    EXPECT_TRUE(snapshot.ok()) << snapshot.status().message();
    return snapshot.ok() ? std::move(*snapshot) : StatsSnapshot{};
  }

  std::vector<uint64_t> memory_ = std::vector<uint64_t>(ZL_STATS_REGION_BYTES / sizeof(uint64_t));
};

uint64_t phase_sum(const zl_stats_request& r) {
  return r.transport_in_ns + r.admission_ns + r.queue_ns + r.prefill_ns + r.decode_ns + r.other_ns + r.transport_out_ns;
}

TEST_F(StatsPublisherTest, PhasesTileEachRequestAndQueueIsZeroWithCapacity) {
  StatsSnapshot s = run(8, {{1, 2, 3, 4, 5}, {6, 7, 8}, {9, 10, 11, 12}}, 6);
  EXPECT_STREQ(s.config.device, "cpu");
  ASSERT_EQ(s.requests.size(), 3u);
  for (const zl_stats_request& r : s.requests) {
    EXPECT_EQ(phase_sum(r), r.delivered_ns - r.submitted_ns) << "request " << r.request_id;
    EXPECT_EQ(r.queue_ns, 0u) << "eight slots for three requests: nobody waits for capacity";
    EXPECT_EQ(r.transport, uint32_t(ZL_STATS_TRANSPORT_SHM));
    EXPECT_GE(r.client_tag, 1000u);
    EXPECT_EQ(r.num_generated_tokens, 6);
    EXPECT_EQ(r.num_prefill_chunks, 1u);             // the prompt fits one step's budget
    EXPECT_EQ(r.num_decode_steps, 5u);               // the prefill step samples the first token
    EXPECT_GT(r.prefill_chunks[0].ns, 0u);
    EXPECT_EQ(r.prefill_chunks[0].num_tokens, r.num_prompt_tokens);
    EXPECT_EQ(r.other_ns, 0u);
    uint64_t steps = 0;
    for (uint32_t i = 0; i < r.num_decode_steps; ++i) steps += r.decode_step_ns[i];
    EXPECT_EQ(steps, r.decode_ns);
  }
  EXPECT_EQ(s.counters.num_requests_traced, 3);
  EXPECT_EQ(s.counters.generation_tokens_total, 18);
  EXPECT_EQ(s.counters.num_finished_by_reason[ZL_SHM_FINISH_LENGTH], 3);
  EXPECT_EQ(s.histograms[ZL_STATS_HIST_PHASE_QUEUE_NS].max(), 0u);
  EXPECT_EQ(s.histograms[ZL_STATS_HIST_PHASE_TOTAL_NS].count(), 3u);
  EXPECT_EQ(s.histograms[ZL_STATS_HIST_TTFT_NS].count(), 3u);
  EXPECT_GT(s.histograms[ZL_STATS_HIST_SCHED_GAP_NS].count(), 0u);
  EXPECT_EQ(s.histograms[ZL_STATS_HIST_BATCH_SEQS].count(), uint64_t(s.counters.num_steps));
}

TEST_F(StatsPublisherTest, RequestWaitingForASlotHasQueueTime) {
  StatsSnapshot s = run(1, {{1, 2, 3}, {4, 5, 6}}, 32);
  ASSERT_EQ(s.requests.size(), 2u);
  const zl_stats_request& first = s.requests[0];
  const zl_stats_request& second = s.requests[1];
  EXPECT_EQ(first.queue_ns, 0u);
  if (second.submitted_ns >= first.finished_ns)
    GTEST_SKIP() << "this thread was descheduled for the whole first request: the second never had to wait";
  EXPECT_GT(second.queue_ns, 0u) << "one slot: the second waits for the first to finish";
  EXPECT_GE(second.submitted_ns + second.admission_ns + second.queue_ns, first.finished_ns);
  for (const zl_stats_request& r : s.requests) EXPECT_EQ(phase_sum(r), r.delivered_ns - r.submitted_ns);
}

TEST_F(StatsPublisherTest, SharedPrefixShowsInTheSignatureTable) {
  std::vector<int32_t> prefix(32);  // two full blocks of 16
  for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = int32_t(10 + i);
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t i = 0; i < 3; ++i) {
    prompts.push_back(prefix);
    prompts.back().insert(prompts.back().end(), {100 + i, 101 + i});
  }
  // One slot, so each request runs after the previous one cached the prefix.
  StatsSnapshot s = run(1, prompts, 2);
  ASSERT_EQ(s.signatures.size(), 1u);
  EXPECT_EQ(s.signatures[0].hits, 2u);
  EXPECT_EQ(s.signatures[0].num_blocks, 2);
  EXPECT_EQ(s.signatures[0].tokens_saved, 64u);
  EXPECT_EQ(s.counters.prefix_num_queries, 3);
  EXPECT_EQ(s.counters.prefix_num_hits, 2);
  EXPECT_EQ(s.requests.back().num_cached_prompt_tokens, 32);
}

}  // namespace
}  // namespace zl
