// After warm-up the KV pool's step-path operations (admit with prefix
// lookup, ensure_capacity, commit with block signing, release, LRU eviction)
// never reach the allocator (issue 3: "after warm-up a step allocates
// nothing"). This binary replaces the global operator new to count calls
// (engine/alloc_counter.h), so it holds no other tests.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/alloc_counter.h"
#include "engine/kv_pool.h"

namespace zl {
namespace {

constexpr int32_t kBlockSize = 4;
constexpr int32_t kNumBlocks = 64;
constexpr int32_t kNumSlots = 8;        // sequences alive at once
constexpr int32_t kMaxTotalTokens = 56;  // 14 blocks: 8 sequences overfill the pool
constexpr int32_t kPrefixTokens = 12;   // shared prefixes: 3 full blocks
constexpr int32_t kNumPrefixes = 4;

// One engine-like slot: a sequence's blocks and tokens, reused across
// requests the way the engine reuses its buffers (capacity kept).
struct Slot {
  SeqBlocks blocks;
  std::vector<int32_t> tokens;
  int32_t max_total = 0;
  int salt = 0;
};

struct Counts {
  int64_t admissions = 0;
  int64_t signed_blocks = 0;
  int64_t releases = 0;
};

// One random operation on one slot: admit (prompt = a shared prefix or not,
// then random tokens), or decode a token (ensure_capacity, commit: signs each
// block that fills), or release (finish, or preempt when out of memory).
void step(KvPool& pool, Slot& slot, std::mt19937& rng, const BlockSignature (&salts)[2], Counts& counts) {
  auto uniform = [&](int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng); };
  if (slot.blocks.table.empty()) {
    slot.tokens.clear();
    int32_t prefix = uniform(-1, kNumPrefixes - 1);
    for (int32_t i = 0; prefix >= 0 && i < kPrefixTokens; ++i) slot.tokens.push_back(100 * prefix + i);
    for (int32_t n = uniform(1, 20); n > 0; --n) slot.tokens.push_back(uniform(1000, 1100));
    slot.max_total = uniform(static_cast<int32_t>(slot.tokens.size()), kMaxTotalTokens);
    slot.salt = uniform(0, 1);
    if (pool.admit(slot.tokens, slot.max_total, salts[slot.salt], &slot.blocks) != AdmitOutcome::kAdmitted) return;
    ++counts.admissions;
    int32_t signed_before = slot.blocks.num_signed_blocks;
    pool.commit(slot.blocks, slot.tokens, static_cast<int32_t>(slot.tokens.size()));
    counts.signed_blocks += slot.blocks.num_signed_blocks - signed_before;
    return;
  }
  int32_t n = static_cast<int32_t>(slot.tokens.size());
  if (n == slot.max_total || uniform(0, 15) == 0 || !pool.ensure_capacity(slot.blocks, n + 1)) {
    pool.release(slot.blocks);
    ++counts.releases;
    return;
  }
  slot.tokens.push_back(uniform(1000, 1100));
  int32_t signed_before = slot.blocks.num_signed_blocks;
  pool.commit(slot.blocks, slot.tokens, n + 1);
  counts.signed_blocks += slot.blocks.num_signed_blocks - signed_before;
}

class KvPoolAllocTest : public testing::TestWithParam<CachePolicy> {};

TEST_P(KvPoolAllocTest, StepPathAllocatesNothingAfterWarmUp) {
  KvPool pool(KvPoolConfig{kNumBlocks, kBlockSize, GetParam()});
  const BlockSignature salts[2] = {make_cache_salt(7, ""), make_cache_salt(7, "other")};
  std::vector<Slot> slots(kNumSlots);
  for (Slot& slot : slots) {
    slot.tokens.reserve(kMaxTotalTokens);
    slot.blocks.table.reserve(kNumBlocks);
  }
  std::mt19937 rng(1234);
  Counts warm_up;
  for (int i = 0; i < 20'000; ++i) step(pool, slots[rng() % kNumSlots], rng, salts, warm_up);

  Counts counts;
  KvPoolStats before = pool.stats();
  int64_t allocations_before = test::g_num_allocations.load();
  for (int i = 0; i < 100'000; ++i) step(pool, slots[rng() % kNumSlots], rng, salts, counts);
  int64_t allocations = test::g_num_allocations.load() - allocations_before;
  KvPoolStats after = pool.stats();

  EXPECT_EQ(allocations, 0);
  // The window did what it claims: signing, prefix hits, releases, evictions.
  EXPECT_GT(counts.admissions, 1000);
  EXPECT_GT(counts.signed_blocks, 10'000);
  EXPECT_GT(counts.releases, 1000);
  EXPECT_GT(after.prefix_hit_tokens, before.prefix_hit_tokens);
  EXPECT_GT(after.num_evictions - before.num_evictions, 1000);
  std::vector<const SeqBlocks*> live;
  for (const Slot& slot : slots) live.push_back(&slot.blocks);
  Status status = pool.check_invariants(live);
  EXPECT_TRUE(status.ok()) << status.message();
}

INSTANTIATE_TEST_SUITE_P(Policies, KvPoolAllocTest,
                         testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid),
                         [](const testing::TestParamInfo<CachePolicy>& info) {
                           return std::string(cache_policy_name(info.param));
                         });

}  // namespace
}  // namespace zl
