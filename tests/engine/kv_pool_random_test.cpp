// Seeded random operations on a small KvPool under each policy, with the
// invariants checked after every operation. Besides the pool's own checks,
// the test tracks what each block holds: a block handed out as a shared
// prefix must still hold exactly the KV the new prompt would compute.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "engine/kv_pool.h"

namespace zl {
namespace {

constexpr int32_t kBlockSize = 4;
constexpr int32_t kNumBlocks = 48;
constexpr int kNumOperations = 12000;
constexpr size_t kMaxLive = 10;

struct LiveSeq {
  SeqBlocks blocks;
  std::vector<int32_t> tokens;  // prompt, then the tokens it will "generate"
  int32_t num_prompt = 0;
};

class RandomPoolTest : public ::testing::TestWithParam<CachePolicy> {
 protected:
  void SetUp() override {
    pool_ = std::make_unique<KvPool>(KvPoolConfig{kNumBlocks, kBlockSize, GetParam()});
    content_.assign(kNumBlocks, BlockSignature{});
    salts_ = {make_cache_salt(1, ""), make_cache_salt(1, "other")};
    for (int32_t len : {9, 17, 24}) {
      std::vector<int32_t> prefix;
      for (int32_t i = 0; i < len; ++i) prefix.push_back(static_cast<int32_t>(rng_() % 5));
      prefixes_.push_back(prefix);
    }
  }

  int32_t uniform(int32_t lo, int32_t hi) {  // [lo, hi]
    return lo + static_cast<int32_t>(rng_() % static_cast<uint32_t>(hi - lo + 1));
  }

  // The signature chain of seq's tokens up to and including block `index`.
  BlockSignature chain(const LiveSeq& seq, int32_t index) const {
    BlockSignature sig;
    for (int32_t i = 0; i <= index; ++i) {
      sig = sign_block(sig, std::span(seq.tokens).subspan(i * kBlockSize, kBlockSize),
                       seq.blocks.salt);
    }
    return sig;
  }

  void check(const char* op, int step) {
    std::vector<const SeqBlocks*> live;
    for (const auto& s : live_) live.push_back(&s->blocks);
    Status status = pool_->check_invariants(live);
    ASSERT_TRUE(status.ok()) << op << " at step " << step << ": " << status.to_string();
    KvPoolStats st = pool_->stats();
    ASSERT_EQ(st.num_free_blocks + st.num_cached_blocks + st.num_used_blocks, kNumBlocks);
  }

  // New blocks will be overwritten: they hold nothing reusable any more.
  void forget_from(const SeqBlocks& seq, size_t first) {
    for (size_t i = first; i < seq.table.size(); ++i) content_[seq.table[i]] = BlockSignature{};
  }

  void admit() {
    auto seq = std::make_unique<LiveSeq>();
    if (rng_() % 4 != 0) seq->tokens = prefixes_[rng_() % prefixes_.size()];
    int32_t suffix = uniform(rng_() % 3 == 0 ? 0 : 1, 12);
    if (seq->tokens.empty()) suffix = std::max(suffix, 1);
    for (int32_t i = 0; i < suffix; ++i) seq->tokens.push_back(uniform(0, 2));
    seq->num_prompt = static_cast<int32_t>(seq->tokens.size());
    int32_t max_total = seq->num_prompt + uniform(0, 24);
    if (rng_() % 50 == 0) max_total += kNumBlocks * kBlockSize;  // never fits
    for (int32_t i = seq->num_prompt; i < max_total; ++i) seq->tokens.push_back(uniform(0, 2));
    const BlockSignature& salt = salts_[rng_() % 3 == 0 ? 1 : 0];
    KvPoolStats before = pool_->stats();
    AdmitOutcome outcome = pool_->admit(std::span(seq->tokens).first(seq->num_prompt), max_total,
                                        salt, &seq->blocks);
    bool fits = pool_->can_ever_fit(max_total);
    ASSERT_EQ(outcome == AdmitOutcome::kNeverFits, !fits);
    if (outcome != AdmitOutcome::kAdmitted) {
      KvPoolStats after = pool_->stats();
      ASSERT_EQ(after.num_free_blocks, before.num_free_blocks);
      ASSERT_EQ(after.num_cached_blocks, before.num_cached_blocks);
      ASSERT_EQ(after.num_evictions, before.num_evictions);
      ASSERT_TRUE(seq->blocks.table.empty());
      return;
    }
    const SeqBlocks& b = seq->blocks;
    int32_t num_prefix = b.num_prefix_tokens / kBlockSize;
    ASSERT_LT(b.num_prefix_tokens, seq->num_prompt);
    for (int32_t i = 0; i < num_prefix; ++i) {
      ASSERT_EQ(content_[b.table[i]], chain(*seq, i)) << "shared block " << b.table[i];
    }
    forget_from(b, static_cast<size_t>(num_prefix));
    live_.push_back(std::move(seq));
  }

  // Computes a random chunk (growing the table first when it must).
  void compute(LiveSeq& seq) {
    SeqBlocks& b = seq.blocks;
    int32_t total = static_cast<int32_t>(seq.tokens.size());
    if (b.num_computed_tokens == total) return;
    int32_t target = std::min(total, b.num_computed_tokens + uniform(1, 3 * kBlockSize));
    size_t old_size = b.table.size();
    KvPoolStats before = pool_->stats();
    if (!pool_->ensure_capacity(b, target)) {
      ASSERT_EQ(pool_->stats().num_free_blocks, before.num_free_blocks);
      ASSERT_EQ(b.table.size(), old_size);
      return;
    }
    forget_from(b, old_size);
    int32_t first_new_block = b.num_computed_tokens / kBlockSize;
    pool_->commit(b, seq.tokens, target);
    for (int32_t i = first_new_block; (i + 1) * kBlockSize <= target; ++i) {
      content_[b.table[i]] = chain(seq, i);
    }
  }

  void grow(LiveSeq& seq) {
    SeqBlocks& b = seq.blocks;
    if (b.contiguous || b.num_reserved_tokens >= b.max_total_tokens) return;
    size_t old_size = b.table.size();
    if (pool_->ensure_capacity(b, uniform(b.num_reserved_tokens + 1, b.max_total_tokens))) {
      forget_from(b, old_size);
    }
  }

  void release(size_t index) {
    pool_->release(live_[index]->blocks);
    ASSERT_TRUE(live_[index]->blocks.table.empty());
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
  }

  std::mt19937_64 rng_{20240611};
  std::unique_ptr<KvPool> pool_;
  std::vector<BlockSignature> salts_;
  std::vector<std::vector<int32_t>> prefixes_;
  std::vector<std::unique_ptr<LiveSeq>> live_;
  std::vector<BlockSignature> content_;  // per block: chain signature of its full KV, or zero
};

TEST_P(RandomPoolTest, InvariantsHoldAfterEveryOperation) {
  int num_admitted = 0;
  for (int step = 0; step < kNumOperations; ++step) {
    uint32_t dice = static_cast<uint32_t>(rng_() % 100);
    const char* op = "admit";
    if (dice < 30 && live_.size() < kMaxLive) {
      size_t before = live_.size();
      ASSERT_NO_FATAL_FAILURE(admit());
      num_admitted += live_.size() > before ? 1 : 0;
    } else if (live_.empty()) {
      continue;
    } else if (dice < 65) {
      op = "commit";
      ASSERT_NO_FATAL_FAILURE(compute(*live_[rng_() % live_.size()]));
    } else if (dice < 80) {
      op = "ensure_capacity";
      grow(*live_[rng_() % live_.size()]);
    } else {
      op = "release";
      ASSERT_NO_FATAL_FAILURE(release(rng_() % live_.size()));
    }
    ASSERT_NO_FATAL_FAILURE(check(op, step));
  }
  while (!live_.empty()) ASSERT_NO_FATAL_FAILURE(release(live_.size() - 1));
  ASSERT_NO_FATAL_FAILURE(check("final release", kNumOperations));
  KvPoolStats s = pool_->stats();
  EXPECT_EQ(s.num_used_blocks, 0);
  EXPECT_EQ(s.num_free_blocks + s.num_cached_blocks, kNumBlocks);
  EXPECT_EQ(s.num_live_signatures, s.num_cached_blocks);
  EXPECT_EQ(s.reserved_ahead, 0.0);
  EXPECT_EQ(s.internal_fragmentation, 0.0);
  // The workload must have exercised sharing and eviction, not only waiting.
  EXPECT_GT(num_admitted, 500);
  EXPECT_GT(s.prefix_hit_tokens, 0);
  EXPECT_GT(s.num_evictions, 0);
  RecordProperty("admitted", num_admitted);
  RecordProperty("evictions", static_cast<int>(s.num_evictions));
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, RandomPoolTest,
                         ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged,
                                           CachePolicy::kHybrid),
                         [](const auto& info) { return std::string(cache_policy_name(info.param)); });

}  // namespace
}  // namespace zl
