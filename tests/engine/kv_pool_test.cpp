// KvPool: prefix sharing, the three policies, LRU eviction, kWait/kNeverFits
// leaving no trace, and the statistics. Every test checks the pool's
// invariants against the sequences it holds after each operation.
#include "engine/kv_pool.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <numeric>
#include <vector>

namespace zl {
namespace {

constexpr int32_t kBlockSize = 4;

std::vector<int32_t> iota_tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void expect_same_stats(const KvPoolStats& a, const KvPoolStats& b) {
  EXPECT_EQ(a.num_free_blocks, b.num_free_blocks);
  EXPECT_EQ(a.num_cached_blocks, b.num_cached_blocks);
  EXPECT_EQ(a.num_used_blocks, b.num_used_blocks);
  EXPECT_EQ(a.num_live_signatures, b.num_live_signatures);
  EXPECT_EQ(a.internal_fragmentation, b.internal_fragmentation);
  EXPECT_EQ(a.reserved_ahead, b.reserved_ahead);
  EXPECT_EQ(a.external_fragmentation, b.external_fragmentation);
  EXPECT_EQ(a.prefix_query_tokens, b.prefix_query_tokens);
  EXPECT_EQ(a.prefix_hit_tokens, b.prefix_hit_tokens);
  EXPECT_EQ(a.num_evictions, b.num_evictions);
}

// A pool plus the sequences a test holds; checks invariants on demand.
class PoolHarness {
 public:
  PoolHarness(CachePolicy policy, int32_t num_blocks)
      : pool_(KvPoolConfig{num_blocks, kBlockSize, policy}), salt_(make_cache_salt(42, "")) {
    seqs_.reserve(64);  // SeqBlocks pointers stay valid
  }

  KvPool& pool() { return pool_; }
  const BlockSignature& salt() const { return salt_; }

  SeqBlocks& admit(const std::vector<int32_t>& prompt, int32_t max_total,
                   AdmitOutcome expected = AdmitOutcome::kAdmitted,
                   const BlockSignature* salt = nullptr) {
    SeqBlocks& seq = seqs_.emplace_back();
    EXPECT_EQ(pool_.admit(prompt, max_total, salt ? *salt : salt_, &seq), expected);
    check();
    return seq;
  }
  // Sequences i = 0, 1, ... with extents of blocks[i] blocks, placed one
  // after the other from block 0 in an empty pool (4-token prompts).
  std::vector<SeqBlocks*> admit_extents(std::initializer_list<int32_t> blocks) {
    std::vector<SeqBlocks*> seqs;
    for (int32_t n : blocks)
      seqs.push_back(&admit(iota_tokens(4, 100 * static_cast<int32_t>(seqs.size())), n * kBlockSize));
    return seqs;
  }
  // Commits the whole prompt (its KV is "computed").
  void commit(SeqBlocks& seq, const std::vector<int32_t>& tokens) {
    pool_.commit(seq, tokens, static_cast<int32_t>(tokens.size()));
    check();
  }
  void release(SeqBlocks& seq) {
    pool_.release(seq);
    check();
  }
  // *rewritten (if given) gets the sequences whose tables changed.
  std::vector<BlockMove> compact(int32_t target_blocks = 0, int32_t max_moves = 0,
                                 std::vector<const SeqBlocks*>* rewritten = nullptr) {
    std::vector<SeqBlocks*> live;
    for (SeqBlocks& s : seqs_)
      if (!s.table.empty()) live.push_back(&s);
    std::vector<BlockMove> moves;
    pool_.compact(live, target_blocks, &moves, max_moves, [&](size_t i) {
      if (rewritten) rewritten->push_back(live[i]);
    });
    check();
    return moves;
  }
  void check() {
    std::vector<const SeqBlocks*> live;
    for (const SeqBlocks& s : seqs_) live.push_back(&s);
    Status status = pool_.check_invariants(live);
    EXPECT_TRUE(status.ok()) << status.to_string();
  }

 private:
  KvPool pool_;
  BlockSignature salt_;
  std::vector<SeqBlocks> seqs_;
};

class KvPoolPolicyTest : public ::testing::TestWithParam<CachePolicy> {};

INSTANTIATE_TEST_SUITE_P(AllPolicies, KvPoolPolicyTest,
                         ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged,
                                           CachePolicy::kHybrid),
                         [](const auto& info) { return std::string(cache_policy_name(info.param)); });

TEST_P(KvPoolPolicyTest, SharedFullBlocksAreSharedByRefcount) {
  PoolHarness h(GetParam(), 32);
  auto shared = iota_tokens(3 * kBlockSize, 1000);
  auto a_prompt = concat(shared, {1, 2});
  auto b_prompt = concat(shared, {7, 8, 9, 10, 11});
  SeqBlocks& a = h.admit(a_prompt, 20);
  EXPECT_EQ(a.num_prefix_tokens, 0);
  h.commit(a, a_prompt);
  EXPECT_EQ(a.num_signed_blocks, 3);
  SeqBlocks& b = h.admit(b_prompt, 20);
  EXPECT_EQ(b.num_prefix_tokens, 3 * kBlockSize);
  EXPECT_EQ(b.num_computed_tokens, 3 * kBlockSize);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.table[i], a.table[i]);
    EXPECT_EQ(h.pool().block_refcount(a.table[i]), 2);
  }
  EXPECT_NE(b.table[3], a.table[3]);
  EXPECT_EQ(h.pool().block_refcount(b.table[3]), 1);
  KvPoolStats s = h.pool().stats();
  EXPECT_EQ(s.prefix_query_tokens, static_cast<int64_t>(a_prompt.size() + b_prompt.size()));
  EXPECT_EQ(s.prefix_hit_tokens, 3 * kBlockSize);
  h.release(a);
  EXPECT_EQ(h.pool().block_refcount(b.table[0]), 1);
  h.release(b);
  EXPECT_EQ(h.pool().stats().num_used_blocks, 0);
  EXPECT_EQ(h.pool().stats().num_cached_blocks, 3);  // b never committed its own blocks
}

// Releasing several sequences in one call (the engine's finishes of a step)
// leaves the pool exactly as releasing them one by one: the same free, cached
// and used blocks, the same LRU order, so later admissions get the same blocks.
TEST_P(KvPoolPolicyTest, ReleasingTogetherEqualsReleasingOneByOne) {
  PoolHarness one(GetParam(), 48), together(GetParam(), 48);
  auto shared = iota_tokens(2 * kBlockSize, 500);
  std::vector<std::vector<int32_t>> prompts = {concat(shared, {1, 2, 3}), concat(shared, {4, 5, 6, 7, 8}),
                                               iota_tokens(9, 100), iota_tokens(3, 200), iota_tokens(13, 300)};
  std::vector<SeqBlocks*> in_one, in_together;
  for (const auto& prompt : prompts) {
    for (PoolHarness* h : {&one, &together}) {
      SeqBlocks& seq = h->admit(prompt, static_cast<int32_t>(prompt.size()) + 6);
      h->commit(seq, prompt);
      (h == &one ? in_one : in_together).push_back(&seq);
    }
  }
  for (size_t i : {0u, 1u, 3u, 4u}) one.release(*in_one[i]);
  std::vector<SeqBlocks*> batch = {in_together[0], in_together[1], in_together[3], in_together[4]};
  together.pool().release(batch);
  together.check();
  expect_same_stats(one.pool().stats(), together.pool().stats());
  // Enough new sequences to take every free block and evict cached ones.
  for (int32_t i = 0; i < 10 && together.pool().stats().num_evictions == 0; ++i) {
    auto prompt = iota_tokens(11, 1000 + 50 * i);
    SeqBlocks& a = one.admit(prompt, 16);
    SeqBlocks& b = together.admit(prompt, 16);
    ASSERT_TRUE(one.pool().ensure_capacity(a, 16));  // paged: the blocks beyond the prompt
    ASSERT_TRUE(together.pool().ensure_capacity(b, 16));
    EXPECT_EQ(a.table, b.table) << "admission " << i;
  }
  expect_same_stats(one.pool().stats(), together.pool().stats());
  EXPECT_GT(together.pool().stats().num_evictions, 0);
}

TEST_P(KvPoolPolicyTest, DifferentSaltSharesNothing) {
  PoolHarness h(GetParam(), 32);
  auto prompt = iota_tokens(3 * kBlockSize + 1, 5);
  SeqBlocks& a = h.admit(prompt, 16);
  h.commit(a, prompt);
  BlockSignature other = make_cache_salt(42, "tenant-b");
  SeqBlocks& b = h.admit(prompt, 16, AdmitOutcome::kAdmitted, &other);
  EXPECT_EQ(b.num_prefix_tokens, 0);
  for (int32_t id : b.table) EXPECT_EQ(h.pool().block_refcount(id), 1);
}

TEST_P(KvPoolPolicyTest, FullyCachedPromptRecomputesItsLastBlock) {
  PoolHarness h(GetParam(), 32);
  auto prompt = iota_tokens(3 * kBlockSize, 9);
  SeqBlocks& a = h.admit(prompt, 3 * kBlockSize);
  h.commit(a, prompt);
  std::vector<int32_t> a_table = a.table;
  h.release(a);
  EXPECT_EQ(h.pool().stats().num_cached_blocks, 3);
  SeqBlocks& b = h.admit(prompt, 3 * kBlockSize);
  EXPECT_EQ(b.num_prefix_tokens, 2 * kBlockSize);
  ASSERT_EQ(b.table.size(), 3u);
  EXPECT_EQ(b.table[0], a_table[0]);
  EXPECT_EQ(b.table[1], a_table[1]);
  EXPECT_NE(b.table[2], a_table[2]);  // a fresh block: free ones go before cached ones
  h.commit(b, prompt);
  // The recomputed block's signature was already indexed: one entry each.
  EXPECT_EQ(h.pool().stats().num_live_signatures, 3);
  h.release(b);
  KvPoolStats s = h.pool().stats();
  EXPECT_EQ(s.num_cached_blocks, 3);
  EXPECT_EQ(s.num_free_blocks, 29);
}

TEST_P(KvPoolPolicyTest, ConcurrentEqualPromptsKeepOneIndexEntry) {
  PoolHarness h(GetParam(), 32);
  auto prompt = iota_tokens(2 * kBlockSize + 1, 3);
  SeqBlocks& a = h.admit(prompt, 12);
  SeqBlocks& b = h.admit(prompt, 12);  // before a commits: nothing to share yet
  EXPECT_EQ(b.num_prefix_tokens, 0);
  h.commit(a, prompt);
  h.commit(b, prompt);
  EXPECT_EQ(h.pool().stats().num_live_signatures, 2);
  EXPECT_EQ(b.num_signed_blocks, 2);
  EXPECT_EQ(b.last_signature, a.last_signature);
  h.release(a);
  h.release(b);
  KvPoolStats s = h.pool().stats();
  EXPECT_EQ(s.num_cached_blocks, 2);  // a's; b's duplicates became free
  EXPECT_EQ(s.num_free_blocks, 30);
}

TEST_P(KvPoolPolicyTest, ReleaseBeforeAnyCommitFreesEverything) {
  PoolHarness h(GetParam(), 16);
  auto prompt = iota_tokens(10, 0);
  SeqBlocks& a = h.admit(prompt, 30);
  h.release(a);
  EXPECT_TRUE(a.table.empty());
  KvPoolStats s = h.pool().stats();
  EXPECT_EQ(s.num_free_blocks, 16);
  EXPECT_EQ(s.num_cached_blocks, 0);
  EXPECT_EQ(s.reserved_ahead, 0.0);
  h.release(a);  // releasing an empty sequence does nothing
}

TEST_P(KvPoolPolicyTest, NeverFitsBeyondThePool) {
  PoolHarness h(GetParam(), 4);
  EXPECT_TRUE(h.pool().can_ever_fit(16));
  EXPECT_FALSE(h.pool().can_ever_fit(17));
  // Paged judges by max_total_tokens too, so an admitted request can finish alone.
  h.admit(iota_tokens(4, 0), 17, AdmitOutcome::kNeverFits);
  KvPoolStats s = h.pool().stats();
  EXPECT_EQ(s.num_free_blocks, 4);
  EXPECT_EQ(s.prefix_query_tokens, 0);
}

TEST_P(KvPoolPolicyTest, WaitLeavesNoTrace) {
  PoolHarness h(GetParam(), 8);
  auto cached_prompt = iota_tokens(2 * kBlockSize + 1, 50);
  SeqBlocks& a = h.admit(cached_prompt, 9);
  h.commit(a, cached_prompt);
  h.release(a);  // two cached blocks, the rest free
  SeqBlocks& hog = h.admit(iota_tokens(20, 500), 20);  // 5 of the 6 free blocks
  KvPoolStats before = h.pool().stats();
  // Shares a's two cached blocks and needs more than is left.
  auto prompt = concat(cached_prompt, iota_tokens(8, 900));
  SeqBlocks& w = h.admit(prompt, 28, AdmitOutcome::kWait);
  EXPECT_TRUE(w.table.empty());
  expect_same_stats(before, h.pool().stats());
  h.release(hog);
  SeqBlocks& again = h.admit(prompt, 28);
  EXPECT_EQ(again.num_prefix_tokens, 2 * kBlockSize);
  EXPECT_EQ(again.table.size(), GetParam() == CachePolicy::kPaged ? 5u : 7u);
}

TEST_P(KvPoolPolicyTest, StatsCountHeldSlots) {
  PoolHarness h(GetParam(), 10);
  auto prompt = iota_tokens(5, 0);
  SeqBlocks& a = h.admit(prompt, 6);  // 2 blocks, 8 slots, 6 usable
  double slots = 10.0 * kBlockSize;
  KvPoolStats s = h.pool().stats();
  EXPECT_EQ(s.num_used_blocks, 2);
  EXPECT_DOUBLE_EQ(s.internal_fragmentation, 2 / slots);
  EXPECT_DOUBLE_EQ(s.reserved_ahead, 6 / slots);
  h.commit(a, prompt);
  EXPECT_DOUBLE_EQ(h.pool().stats().reserved_ahead, 1 / slots);
  EXPECT_EQ(h.pool().stats().num_live_signatures, 1);
}

TEST(KvPoolTest, ContiguousExtentIsConsecutiveAfterTheSharedPrefix) {
  PoolHarness h(CachePolicy::kContiguous, 64);
  SeqBlocks& first = h.admit(iota_tokens(5, 7000), 40);  // occupies [0, 10)
  auto shared = iota_tokens(2 * kBlockSize, 100);
  SeqBlocks& a = h.admit(concat(shared, {1}), 12);
  h.commit(a, concat(shared, {1}));
  SeqBlocks& b = h.admit(concat(shared, iota_tokens(6, 300)), 50);
  EXPECT_TRUE(b.contiguous);
  EXPECT_EQ(b.num_prefix_tokens, 2 * kBlockSize);
  ASSERT_EQ(b.table.size(), 13u);  // ceil(50 / 4)
  EXPECT_EQ(b.table[0], a.table[0]);
  EXPECT_EQ(b.table[1], a.table[1]);
  for (size_t i = 3; i < b.table.size(); ++i) EXPECT_EQ(b.table[i], b.table[i - 1] + 1);
  EXPECT_TRUE(h.pool().ensure_capacity(b, 50));
  EXPECT_EQ(first.table.size(), 10u);
}

TEST(KvPoolTest, ContiguousPicksTheBestFittingFreeRun) {
  PoolHarness h(CachePolicy::kContiguous, 20);
  SeqBlocks& a = h.admit(iota_tokens(4, 0), 20);    // [0, 5)
  SeqBlocks& b = h.admit(iota_tokens(4, 100), 4);   // [5, 6)
  SeqBlocks& c = h.admit(iota_tokens(4, 200), 12);  // [6, 9)
  SeqBlocks& d = h.admit(iota_tokens(4, 300), 4);   // [9, 10)
  EXPECT_EQ(d.table[0], 9);
  h.release(a);
  h.release(c);  // free runs: [0, 5), [6, 9), [10, 20)
  SeqBlocks& e = h.admit(iota_tokens(4, 400), 12);
  EXPECT_EQ(e.table.front(), 6);
  SeqBlocks& f = h.admit(iota_tokens(4, 500), 16);
  EXPECT_EQ(f.table.front(), 0);
  EXPECT_GT(b.table.size(), 0u);
}

TEST(KvPoolTest, ContiguousPrefersFreeRunsToEvictingCachedOnes) {
  PoolHarness h(CachePolicy::kContiguous, 12);
  auto prompt = iota_tokens(3 * kBlockSize + 1, 0);
  SeqBlocks& a = h.admit(prompt, 16);  // [0, 4), three blocks get signed
  h.commit(a, prompt);
  h.release(a);
  SeqBlocks& b = h.admit(iota_tokens(4, 77), 32);  // 8 blocks: [3, 12) is free
  EXPECT_EQ(b.table.front(), 3);
  EXPECT_EQ(h.pool().stats().num_evictions, 0);
  EXPECT_EQ(h.pool().stats().num_cached_blocks, 3);
}

TEST(KvPoolTest, ContiguousDropsAPrefixThatSplitsTheOnlyRun) {
  PoolHarness h(CachePolicy::kContiguous, 4);
  SeqBlocks& x = h.admit(iota_tokens(4, 900), 4);  // block 0
  auto prompt = iota_tokens(2 * kBlockSize + 1, 0);
  SeqBlocks& a = h.admit(prompt, 9);  // blocks 1, 2, 3
  h.commit(a, prompt);
  h.release(x);
  h.release(a);  // 1 and 2 cached, in the middle of the pool
  SeqBlocks& b = h.admit(prompt, 16);
  EXPECT_EQ(b.num_prefix_tokens, 0);
  EXPECT_EQ(b.table, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(h.pool().stats().num_evictions, 2);
}

TEST(KvPoolTest, PagedGrowsOnDemandUntilExhausted) {
  PoolHarness h(CachePolicy::kPaged, 6);
  auto prompt = iota_tokens(5, 0);
  SeqBlocks& a = h.admit(prompt, 24);
  EXPECT_FALSE(a.contiguous);
  EXPECT_EQ(a.table.size(), 2u);  // the prompt only
  h.commit(a, prompt);
  EXPECT_TRUE(h.pool().ensure_capacity(a, 8));
  EXPECT_EQ(a.table.size(), 2u);
  EXPECT_TRUE(h.pool().ensure_capacity(a, 9));
  EXPECT_EQ(a.table.size(), 3u);
  SeqBlocks& b = h.admit(iota_tokens(9, 100), 24);  // takes the last 3 blocks
  h.check();
  KvPoolStats before = h.pool().stats();
  EXPECT_FALSE(h.pool().ensure_capacity(a, 13));
  expect_same_stats(before, h.pool().stats());
  h.release(b);
  EXPECT_TRUE(h.pool().ensure_capacity(a, 24));
  EXPECT_EQ(a.table.size(), 6u);
  h.check();
}

TEST(KvPoolTest, HybridFallsBackToPagedWhenNoRunFits) {
  PoolHarness h(CachePolicy::kHybrid, 8);
  SeqBlocks& a = h.admit(iota_tokens(4, 0), 8);    // [0, 2)
  SeqBlocks& b = h.admit(iota_tokens(4, 10), 8);   // [2, 4)
  SeqBlocks& c = h.admit(iota_tokens(4, 20), 8);   // [4, 6)
  SeqBlocks& d = h.admit(iota_tokens(4, 30), 8);   // [6, 8)
  EXPECT_TRUE(a.contiguous && b.contiguous && c.contiguous && d.contiguous);
  h.release(b);
  h.release(d);  // free: [2, 4) and [6, 8)
  SeqBlocks& e = h.admit(iota_tokens(4, 40), 16);
  EXPECT_FALSE(e.contiguous);
  EXPECT_EQ(e.table.size(), 1u);
  EXPECT_TRUE(h.pool().ensure_capacity(e, 16));
  EXPECT_EQ(e.table.size(), 4u);
  h.check();
  SeqBlocks& f = h.admit(iota_tokens(4, 50), 4, AdmitOutcome::kWait);
  EXPECT_TRUE(f.table.empty());
  h.release(c);
  SeqBlocks& g = h.admit(iota_tokens(4, 60), 8);
  EXPECT_TRUE(g.contiguous);
  EXPECT_EQ(g.table, (std::vector<int32_t>{4, 5}));
}

TEST(KvPoolTest, LeastRecentlyReleasedBlocksAreEvictedFirst) {
  PoolHarness h(CachePolicy::kPaged, 10);
  auto a_prompt = iota_tokens(2 * kBlockSize + 1, 0);
  auto b_prompt = iota_tokens(2 * kBlockSize + 1, 100);
  SeqBlocks& a = h.admit(a_prompt, 9);
  h.commit(a, a_prompt);
  SeqBlocks& b = h.admit(b_prompt, 9);
  h.commit(b, b_prompt);
  h.release(a);  // a's blocks are the least recently released
  h.release(b);
  // A matching prompt reuses released blocks.
  SeqBlocks& a2 = h.admit(a_prompt, 9);
  EXPECT_EQ(a2.num_prefix_tokens, 2 * kBlockSize);
  h.release(a2);
  // Now a's blocks are the most recent: 6 free blocks + 1 eviction must hit b's tail.
  SeqBlocks& c = h.admit(iota_tokens(7 * kBlockSize, 500), 7 * kBlockSize);
  EXPECT_EQ(h.pool().stats().num_evictions, 1);
  SeqBlocks& a3 = h.admit(a_prompt, 9);
  EXPECT_EQ(a3.num_prefix_tokens, 2 * kBlockSize);
  EXPECT_EQ(h.pool().stats().num_evictions, 2);  // a3's last block took b's first
  h.release(c);
}

TEST(KvPoolTest, ReleaseEvictsTailsBeforePrefixes) {
  PoolHarness h(CachePolicy::kPaged, 4);
  auto prompt = iota_tokens(3 * kBlockSize + 1, 0);
  SeqBlocks& a = h.admit(prompt, 13);
  h.commit(a, prompt);
  h.release(a);  // blocks 0..2 cached, the partial one free
  SeqBlocks& b = h.admit(iota_tokens(2 * kBlockSize, 600), 8);  // free one + 1 eviction
  EXPECT_EQ(h.pool().stats().num_evictions, 1);
  h.release(b);
  SeqBlocks& a2 = h.admit(prompt, 13);
  EXPECT_EQ(a2.num_prefix_tokens, 2 * kBlockSize);  // the third block went first
}

TEST(KvPoolCompactionTest, SlidesExtentsTogetherSoALongRunFits) {
  PoolHarness h(CachePolicy::kContiguous, 12);
  SeqBlocks& a = h.admit(iota_tokens(4, 0), 4 * kBlockSize);    // [0, 4)
  SeqBlocks& b = h.admit(iota_tokens(4, 100), 4 * kBlockSize);  // [4, 8)
  SeqBlocks& c = h.admit(iota_tokens(4, 200), 4 * kBlockSize);  // [8, 12)
  h.release(a);
  h.release(c);  // free: [0, 4) and [8, 12)
  EXPECT_DOUBLE_EQ(h.pool().stats().free_space_scatter, 0.5);
  EXPECT_DOUBLE_EQ(h.pool().stats().external_fragmentation, 0.0) << "nobody waits yet";
  h.admit(iota_tokens(4, 300), 8 * kBlockSize, AdmitOutcome::kWait);
  EXPECT_DOUBLE_EQ(h.pool().stats().external_fragmentation, 8.0 / 12) << "8 free blocks idle for lack of a run";
  std::vector<BlockMove> moves = h.compact();
  ASSERT_EQ(moves.size(), 4u);
  EXPECT_EQ(moves[0].src, 4);
  EXPECT_EQ(moves[0].dst, 0);
  EXPECT_EQ(b.table, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(h.pool().stats().free_space_scatter, 0.0);
  SeqBlocks& d = h.admit(iota_tokens(4, 300), 8 * kBlockSize);
  EXPECT_DOUBLE_EQ(h.pool().stats().external_fragmentation, 0.0);
  EXPECT_EQ(d.table.front(), 4);
  EXPECT_EQ(h.pool().stats().num_compactions, 1);
  EXPECT_TRUE(h.compact().empty());  // nothing left to move
}

TEST(KvPoolCompactionTest, TargetedCompactionCopiesOnlyTheShortestSegment) {
  PoolHarness h(CachePolicy::kContiguous, 16);
  // [0, 4), [4, 6), [6, 10), [10, 12), [12, 16)
  std::vector<SeqBlocks*> s = h.admit_extents({4, 2, 4, 2, 4});
  SeqBlocks &a = *s[0], &c = *s[2], &e = *s[4];
  h.release(*s[1]);
  h.release(*s[3]);  // free: [4, 6) and [10, 12); only c lies between them
  h.admit(iota_tokens(4, 500), 4 * kBlockSize, AdmitOutcome::kWait);
  std::vector<BlockMove> moves = h.compact(4);
  ASSERT_EQ(moves.size(), 4u) << "only c's blocks move";
  for (size_t i = 0; i < moves.size(); ++i) {
    EXPECT_EQ(moves[i].src, 6 + static_cast<int32_t>(i));
    EXPECT_EQ(moves[i].dst, 4 + static_cast<int32_t>(i));
  }
  EXPECT_EQ(c.table, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(a.table.front(), 0);
  EXPECT_EQ(e.table.front(), 12);
  SeqBlocks& f = h.admit(iota_tokens(4, 500), 4 * kBlockSize);
  EXPECT_EQ(f.table, (std::vector<int32_t>{8, 9, 10, 11}));
  EXPECT_TRUE(h.compact(4).empty()) << "a run of 4 exists: nothing to do";
}

// A bounded call (a slice) stops at the end of an extent once it has moved
// max_moves blocks; the next goes on over the same stretch.
TEST(KvPoolCompactionTest, SlicesStopAtExtentEndsAndResume) {
  PoolHarness h(CachePolicy::kContiguous, 16);
  std::vector<SeqBlocks*> s = h.admit_extents({2, 2, 2, 2, 8});  // [0, 2), [2, 4), [4, 6), [6, 8), [8, 16)
  SeqBlocks &b = *s[1], &c = *s[2], &e = *s[4];
  h.release(*s[0]);
  h.release(*s[3]);  // free: [0, 2) and [6, 8)
  h.admit(iota_tokens(4, 500), 4 * kBlockSize, AdmitOutcome::kWait);
  std::vector<const SeqBlocks*> rewritten;
  std::vector<BlockMove> moves = h.compact(4, /*max_moves=*/1, &rewritten);
  // b's second block continues its extent past the bound; c waits.
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].src, 2);
  EXPECT_EQ(moves[1].dst, 1);
  EXPECT_EQ(b.table, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(c.table, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(rewritten, (std::vector<const SeqBlocks*>{&b}));
  h.admit(iota_tokens(4, 500), 4 * kBlockSize, AdmitOutcome::kWait);  // runs of 2 only
  moves = h.compact(4, /*max_moves=*/1);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(c.table, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(e.table.front(), 8);
  SeqBlocks& f = h.admit(iota_tokens(4, 500), 4 * kBlockSize);
  EXPECT_EQ(f.table, (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(h.pool().stats().num_compactions, 2);
  EXPECT_EQ(h.pool().stats().max_block_moves, 2);
}

TEST(KvPoolCompactionTest, SharedPrefixBlocksMoveInEveryTableAndSignaturesFollow) {
  PoolHarness h(CachePolicy::kContiguous, 12);
  SeqBlocks& hole = h.admit(iota_tokens(4, 900), 2 * kBlockSize);  // [0, 2)
  auto prompt = iota_tokens(3 * kBlockSize + 1, 0);
  SeqBlocks& a = h.admit(prompt, 4 * kBlockSize);  // [2, 6)
  h.commit(a, prompt);                             // blocks 2, 3, 4 signed
  auto shared = iota_tokens(2 * kBlockSize + 1, 0);
  SeqBlocks& b = h.admit(shared, 3 * kBlockSize);  // prefix {2, 3}, extent [6, 7)
  ASSERT_EQ(b.num_prefix_tokens, 2 * kBlockSize);
  h.release(hole);
  h.compact();
  // a slides to [0, 4) carrying blocks still shared by b, whose table follows.
  EXPECT_EQ(a.table, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(b.table, (std::vector<int32_t>{0, 1, 4}));
  // The prefix index follows the moved blocks: the same prompt finds them.
  SeqBlocks& c = h.admit(prompt, 4 * kBlockSize);
  EXPECT_EQ(c.num_prefix_tokens, 3 * kBlockSize);
  EXPECT_EQ(std::vector<int32_t>(c.table.begin(), c.table.begin() + 3), (std::vector<int32_t>{0, 1, 2}));
}

}  // namespace
}  // namespace zl
