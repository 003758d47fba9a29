// The fragmentation workload at full size (10,000 requests, lengths
// 16..1024) under each policy. It records the figures (RecordProperty, and
// printed) and asserts only sane bounds; bench/kv_pool_fragmentation.cpp
// prints the same figures as JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "engine/kv_pool_workload.h"

namespace zl {
namespace {

class KvPoolWorkloadSlowTest : public ::testing::TestWithParam<CachePolicy> {};

TEST_P(KvPoolWorkloadSlowTest, FragmentationOfAMixedLengthWorkload) {
  KvWorkloadConfig config;
  config.policy = GetParam();
  config.num_requests = 10000;
  KvWorkloadResult r = run_kv_workload(config);
  std::printf("%s\n", kv_workload_json(r).c_str());
  RecordProperty("internal_fragmentation_pct", std::to_string(100 * r.internal_fragmentation_mean));
  RecordProperty("external_fragmentation_pct", std::to_string(100 * r.external_fragmentation_mean));
  RecordProperty("free_space_scatter_pct", std::to_string(100 * r.free_space_scatter_mean));
  RecordProperty("reserved_ahead_pct", std::to_string(100 * r.reserved_ahead_mean));
  RecordProperty("prefix_hit_rate", std::to_string(r.prefix_hit_rate));

  EXPECT_GT(r.num_steps, 0);
  for (double mean : {r.internal_fragmentation_mean, r.external_fragmentation_mean,
                      r.reserved_ahead_mean, r.used_blocks_mean}) {
    EXPECT_TRUE(std::isfinite(mean));
    EXPECT_GE(mean, 0.0);
    EXPECT_LE(mean, 1.0);
  }
  EXPECT_LE(r.internal_fragmentation_max, 1.0);
  EXPECT_LE(r.external_fragmentation_max, 1.0);
  EXPECT_LE(r.reserved_ahead_max, 1.0);
  // Only rounding to whole blocks is wasted for good: under one block per sequence.
  EXPECT_LT(r.internal_fragmentation_mean, 0.05);
  // Half the requests share a 256-token system prompt, so some prompt tokens hit.
  EXPECT_GT(r.prefix_hit_rate, 0.05);
  EXPECT_LT(r.prefix_hit_rate, 1.0);
  if (GetParam() == CachePolicy::kContiguous) {
    EXPECT_EQ(r.num_preemptions, 0);
    // Compaction gathers a run whenever enough memory is free or cached, so
    // memory never sits idle for lack of one (issue 3's goal: at most 1%).
    EXPECT_LE(r.external_fragmentation_mean, 0.01);
  }
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, KvPoolWorkloadSlowTest,
                         ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged,
                                           CachePolicy::kHybrid),
                         [](const auto& info) { return std::string(cache_policy_name(info.param)); });

}  // namespace
}  // namespace zl
