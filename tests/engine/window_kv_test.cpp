// The engine with window slots (engine/window_slots.h) against the same
// engine keeping every position of the sliding-window layers
// (full_window_kv): on dummy:tiny-window (three layers with a 40-token
// window, one full), prompts up to five windows long, chunked prefill, a
// 150-token shared prefix reused from the cache, under every cache policy
// and with slots scarce enough to hold admissions back, the tokens must be
// the same, and all memory must come back.
#include <gtest/gtest.h>

#include <random>

#include "collecting_sink.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

struct Served {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<int32_t> cached;  // prompt tokens from the prefix cache
  EngineStats stats;
};

std::vector<std::vector<int32_t>> make_prompts() {
  std::mt19937 rng(11);
  auto random_tokens = [&](size_t n) {
    std::vector<int32_t> t;
    while (t.size() < n) t.push_back(3 + static_cast<int32_t>(rng() % 250));
    return t;
  };
  const std::vector<int32_t> prefix = random_tokens(150);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p = prefix;
    for (int32_t t : random_tokens(static_cast<size_t>(5 + 7 * i))) p.push_back(t);
    prompts.push_back(p);
  }
  for (size_t n : {12, 39, 40, 41, 90, 200, 17, 120}) prompts.push_back(random_tokens(n));
  return prompts;
}

Served serve(const std::vector<std::vector<int32_t>>& prompts, CachePolicy policy, bool full_window_kv, int64_t kv_bytes) {
  EngineConfig config;
  config.model = "dummy:tiny-window";
  config.num_threads = 2;
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 96;
  config.cache_policy = policy;
  config.full_window_kv = full_window_kv;
  config.kv_cache_bytes = kv_bytes;
  auto engine_or = Engine::create(config);
  EXPECT_TRUE(engine_or.ok()) << engine_or.status().to_string();
  if (!engine_or.ok()) return {};
  Engine& engine = **engine_or;
  auto submit = [&](const std::vector<int32_t>& prompt) {
    auto sink = std::make_shared<test::CollectingSink>();
    Request r;
    r.prompt_ids = prompt;
    r.max_new_tokens = 24;
    r.sampling.temperature = 0.0f;  // greedy: the two engines must agree
    r.ignore_eos = true;
    r.sink = sink;
    EXPECT_TRUE(engine.submit(std::move(r)).ok());
    return sink;
  };
  // The first alone, so that the others find its prefix cached.
  std::vector<std::shared_ptr<test::CollectingSink>> sinks = {submit(prompts[0])};
  EXPECT_TRUE(sinks[0]->wait());
  for (size_t i = 1; i < prompts.size(); ++i) sinks.push_back(submit(prompts[i]));
  Served run;
  for (auto& sink : sinks) {
    EXPECT_TRUE(sink->wait());
    EXPECT_EQ(sink->num_finish_events, 1);
    EXPECT_EQ(sink->finish.reason, FinishReason::kLength);
    run.tokens.push_back(sink->tokens);
    run.cached.push_back(sink->finish.num_cached_prompt_tokens);
  }
  run.stats = engine.stats();
  return run;
}

class WindowKvTest : public ::testing::TestWithParam<CachePolicy> {};

TEST_P(WindowKvTest, SameTokensAsKeepingEveryPosition) {
  const auto prompts = make_prompts();
  const Served full = serve(prompts, GetParam(), /*full_window_kv=*/true, 8 << 20);
  ASSERT_EQ(full.tokens.size(), prompts.size());
  EXPECT_EQ(full.stats.window_slots, 0);
  // Roomy (every sequence's window at once), then scarce: 10 slots of 4 a
  // window, so at most two long sequences run at a time.
  for (int64_t kv_bytes : {int64_t{8} << 20, int64_t{512} << 10}) {
    SCOPED_TRACE(kv_bytes);
    const Served windowed = serve(prompts, GetParam(), /*full_window_kv=*/false, kv_bytes);
    ASSERT_EQ(windowed.tokens.size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(windowed.tokens[i], full.tokens[i]) << "prompt " << i;
    EXPECT_GT(windowed.stats.window_slots, 0);
    EXPECT_EQ(windowed.stats.window_slots_pinned, 0);
    EXPECT_EQ(windowed.stats.kv.num_used_blocks, 0);
    // The shared 150-token prefix (nine 16-token blocks, past the window)
    // came from the cache for the later requests that share it (when slots
    // are scarce, surely only for the first of them: the others may find
    // the prefix's last window evicted meanwhile, and compute more).
    const size_t sharing = kv_bytes > (1 << 20) ? 4 : 2;
    for (size_t i = 1; i < sharing; ++i) EXPECT_GE(windowed.cached[i], 144) << "prompt " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, WindowKvTest,
                         ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid),
                         [](const auto& info) { return std::string(cache_policy_name(info.param)); });

}  // namespace
}  // namespace zl
