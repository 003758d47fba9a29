// Faults injected into the engine (core/fault.h) on dummy:tiny: a forward
// pass that fails while the pass after it is already queued, and a KV pool
// that answers "no memory" at admission or when a paged table grows. Each
// request still ends with exactly one terminal event, requests outside the
// failed pass give the tokens of a run without faults, and the pool gets
// every block back. A KV pool that cannot be mapped or committed at start
// fails Engine::create with a message that says how much it asked for.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "collecting_sink.h"
#include "core/fault.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

using Sinks = std::vector<std::shared_ptr<test::CollectingSink>>;

struct EngineSetup {
  int max_num_seqs = 8;
  CachePolicy policy = CachePolicy::kContiguous;
  int64_t kv_bytes = 8 << 20;
  bool overlap = true;
  bool kv_populate = false;
};

EngineConfig engine_config(const EngineSetup& setup) {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 1;
  config.max_num_seqs = setup.max_num_seqs;
  config.max_num_batched_tokens = 64;
  config.kv_cache_bytes = setup.kv_bytes;
  config.cache_policy = setup.policy;
  config.overlap_scheduling = setup.overlap;
  config.kv_populate = setup.kv_populate;
  return config;
}

std::unique_ptr<Engine> make_engine(const EngineSetup& setup) {
  auto engine = Engine::create(engine_config(setup));
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// Greedy requests with distinct prompts, all submitted at once; waits for
// every terminal event.
Sinks run_requests(Engine& engine, int num_requests, int max_new) {
  Sinks sinks;
  for (int i = 0; i < num_requests; ++i) {
    auto sink = std::make_shared<test::CollectingSink>();
    Request r;
    r.prompt_ids = {256, 10 + i, 20 + 3 * i, 7};
    r.max_new_tokens = max_new;
    r.sampling.temperature = 0.0f;
    r.sink = sink;
    EXPECT_TRUE(engine.submit(std::move(r)).ok());
    sinks.push_back(std::move(sink));
  }
  for (auto& sink : sinks) EXPECT_TRUE(sink->wait());
  return sinks;
}

std::vector<std::vector<int32_t>> reference_tokens(const EngineSetup& setup, int num_requests, int max_new) {
  auto engine = make_engine(setup);
  std::vector<std::vector<int32_t>> tokens;
  for (const auto& sink : run_requests(*engine, num_requests, max_new)) tokens.push_back(sink->tokens);
  return tokens;
}

class EngineFaultTest : public ::testing::Test {
 protected:
  void TearDown() override { fault::disarm_all(); }
};

TEST_F(EngineFaultTest, ForwardFailureWhileAPassIsQueuedEndsOnlyItsRequests) {
  // One sequence runs at a time, so the second request waits while the first
  // decodes under overlap scheduling: each pass is queued before the one
  // ahead of it ends, and the 9th pass fails with the 10th queued behind it.
  const EngineSetup setup{.max_num_seqs = 1};
  const auto reference = reference_tokens(setup, 2, 24);
  auto engine = make_engine(setup);
  fault::arm(fault::Point::kForward, {.after = 8, .count = 1});
  Sinks sinks = run_requests(*engine, 2, 24);
  EXPECT_EQ(fault::num_failed(fault::Point::kForward), 1);

  int num_failed = 0;
  for (size_t i = 0; i < sinks.size(); ++i) {
    const test::CollectingSink& s = *sinks[i];
    EXPECT_EQ(s.num_finish_events, 1);
    if (s.finish.reason == FinishReason::kError) {
      ++num_failed;
      EXPECT_NE(s.finish.stop_detail.find("injected fault"), std::string::npos) << s.finish.stop_detail;
      // What it streamed before the failure is what a run without it gave.
      ASSERT_LT(s.tokens.size(), reference[i].size());
      EXPECT_TRUE(std::equal(s.tokens.begin(), s.tokens.end(), reference[i].begin()));
    } else {
      EXPECT_EQ(s.finish.reason, FinishReason::kLength);
      EXPECT_EQ(s.tokens, reference[i]);
    }
  }
  EXPECT_EQ(num_failed, 1);
  EngineStats stats = engine->stats();
  EXPECT_GT(stats.num_overlapped_passes, 0);
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  EXPECT_EQ(stats.num_running + stats.num_waiting, 0);
}

TEST_F(EngineFaultTest, EveryPassFailingEndsEveryRequestOnce) {
  auto engine = make_engine({});
  fault::arm(fault::Point::kForward, {});
  Sinks sinks = run_requests(*engine, 6, 16);
  for (const auto& s : sinks) {
    EXPECT_EQ(s->num_finish_events, 1);
    EXPECT_EQ(s->finish.reason, FinishReason::kError);
    EXPECT_TRUE(s->tokens.empty());
  }
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
}

TEST_F(EngineFaultTest, AdmissionWithoutMemoryWaitsAndThenServes) {
  const auto reference = reference_tokens({}, 4, 16);
  auto engine = make_engine({});
  fault::arm(fault::Point::kKvAdmit, {.after = 1, .count = 5});
  Sinks sinks = run_requests(*engine, 4, 16);
  EXPECT_EQ(fault::num_failed(fault::Point::kKvAdmit), 5);
  for (size_t i = 0; i < sinks.size(); ++i) {
    EXPECT_EQ(sinks[i]->num_finish_events, 1);
    EXPECT_EQ(sinks[i]->finish.reason, FinishReason::kLength);
    EXPECT_EQ(sinks[i]->tokens, reference[i]);
  }
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
}

TEST_F(EngineFaultTest, PagedGrowthWithoutMemoryPreemptsAndEveryRequestFinishes) {
  // Paged tables grow a block every 16 tokens; every third growth fails.
  // Without overlap the engine preempts sequences that then run again from
  // their prompt; with it, a decode without a block first waits for the
  // running pass (whose sequences may not be preempted), and the growth is
  // tried again. Either way every request gets the tokens of a run without
  // faults.
  const auto reference = reference_tokens({.policy = CachePolicy::kPaged}, 4, 60);
  for (bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "overlap" : "no overlap");
    auto engine = make_engine({.policy = CachePolicy::kPaged, .overlap = overlap});
    fault::arm(fault::Point::kKvGrow, {.after = 0, .every = 3, .count = 6});
    Sinks sinks = run_requests(*engine, 4, 60);
    EXPECT_GT(fault::num_failed(fault::Point::kKvGrow), 0);
    for (size_t i = 0; i < sinks.size(); ++i) {
      EXPECT_EQ(sinks[i]->num_finish_events, 1);
      EXPECT_EQ(sinks[i]->finish.reason, FinishReason::kLength);
      EXPECT_EQ(sinks[i]->tokens, reference[i]);
    }
    EngineStats stats = engine->stats();
    if (overlap) {
      EXPECT_GT(stats.num_overlapped_passes, 0);
    } else {
      EXPECT_GT(stats.num_preemptions, 0);
    }
    EXPECT_EQ(stats.kv.num_used_blocks, 0);
    fault::disarm_all();
  }
}

TEST_F(EngineFaultTest, AKvPoolThatCannotBeMappedOrCommittedFailsStartUp) {
  const struct {
    fault::Point point;
    const char* message;
  } cases[] = {{fault::Point::kKvMap, "cannot allocate a KV cache of "},
               {fault::Point::kKvPopulate, "cannot commit the KV pool's "}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    fault::arm(c.point, {.count = 1});
    auto engine = Engine::create(engine_config({.kv_populate = true}));
    ASSERT_FALSE(engine.ok());
    EXPECT_EQ(engine.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(engine.status().message().find(c.message), std::string::npos) << engine.status().to_string();
    EXPECT_NE(engine.status().message().find(" bytes"), std::string::npos) << engine.status().to_string();
    // The fault was spent: the next start gets its pool and serves.
    auto again = Engine::create(engine_config({.kv_populate = true}));
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_EQ(run_requests(**again, 2, 4)[1]->num_finish_events, 1);
  }
}

}  // namespace
}  // namespace zl
