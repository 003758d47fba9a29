// A small run of the synthetic KV workload (the full one is in
// kv_pool_workload_slow_test.cpp): every request finishes, the pool ends
// empty (run_kv_workload CHECKs it) and the figures are fractions.
#include "engine/kv_pool_workload.h"

#include <gtest/gtest.h>

namespace zl {
namespace {

KvWorkloadConfig small_config(CachePolicy policy) {
  KvWorkloadConfig config;
  config.policy = policy;
  config.num_requests = 300;
  config.num_blocks = 256;
  config.max_len = 256;
  config.max_running = 16;
  config.shared_prefix_len = 64;
  return config;
}

TEST(KvPoolWorkloadTest, EveryPolicyFinishesTheWorkload) {
  for (CachePolicy policy : {CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid}) {
    KvWorkloadResult r = run_kv_workload(small_config(policy));
    SCOPED_TRACE(cache_policy_name(policy));
    EXPECT_EQ(r.num_requests, 300);
    EXPECT_GT(r.num_steps, 0);
    EXPECT_GE(r.external_fragmentation_mean, 0.0);
    EXPECT_LE(r.external_fragmentation_max, 1.0);
    EXPECT_LE(r.reserved_ahead_max, 1.0);
    EXPECT_GT(r.prefix_hit_rate, 0.0);
    EXPECT_GT(r.mean_running, 1.0);
    if (policy == CachePolicy::kContiguous) {
      EXPECT_EQ(r.num_preemptions, 0);
    }
  }
}

TEST(KvPoolWorkloadTest, SameSeedSameFigures) {
  KvWorkloadResult a = run_kv_workload(small_config(CachePolicy::kPaged));
  KvWorkloadResult b = run_kv_workload(small_config(CachePolicy::kPaged));
  EXPECT_EQ(kv_workload_json(a), kv_workload_json(b));
}

TEST(KvPoolWorkloadTest, JsonNamesThePolicyAndPercentages) {
  KvWorkloadResult r;
  r.policy = CachePolicy::kHybrid;
  r.num_requests = 7;
  r.external_fragmentation_mean = 0.25;
  std::string json = kv_workload_json(r);
  EXPECT_NE(json.find("\"policy\":\"hybrid\""), std::string::npos);
  EXPECT_NE(json.find("\"requests\":7"), std::string::npos);
  EXPECT_NE(json.find("\"external_fragmentation_pct\":25.000"), std::string::npos);
}

}  // namespace
}  // namespace zl
