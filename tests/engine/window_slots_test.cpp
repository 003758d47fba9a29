// WindowSlots: the sliding-window layers' KV slots. Small cases pin the
// arithmetic; a seeded random workload over a KvPool (every policy, with
// prefix sharing, eviction and compaction) then plays the forward pass: each
// chunk writes a row per position into its slots and reads every position of
// each token's window back, which must hold what that position of this
// sequence wrote (a hash of the tokens up to it), reused prefixes included.
#include "engine/window_slots.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

namespace zl {
namespace {

TEST(WindowSlotsTest, ReserveCoversAWindowOfBlocks) {
  EXPECT_EQ(WindowSlots::full_reserve(512, 16), 33);  // 511 positions behind: 32 blocks + the current
  EXPECT_EQ(WindowSlots::full_reserve(1, 16), 1);
  EXPECT_EQ(WindowSlots::full_reserve(17, 16), 2);
  EXPECT_EQ(WindowSlots::full_reserve(18, 16), 3);
  WindowSlots slots(8, 16, 4, 10);
  EXPECT_EQ(slots.reserve_for(1000), WindowSlots::full_reserve(10, 4));
  EXPECT_EQ(slots.reserve_for(5), 2);  // a short sequence needs only its extent
}

TEST(WindowSlotsTest, DecodingPinsOnlyTheWindow) {
  constexpr int32_t kBlockSize = 4, kWindow = 6, kTokens = 64;
  KvPool pool(KvPoolConfig{32, kBlockSize, CachePolicy::kContiguous});
  WindowSlots slots(8, 32, kBlockSize, kWindow);
  std::vector<int32_t> tokens(kTokens);
  for (int32_t i = 0; i < kTokens; ++i) tokens[static_cast<size_t>(i)] = i % 7;
  SeqBlocks blocks;
  SeqWindow window;
  window.slots.assign(32, 0);
  ASSERT_TRUE(slots.can_admit(kTokens));
  ASSERT_EQ(pool.admit(std::span(tokens).first(3), kTokens, make_cache_salt(1, ""), &blocks, &slots), AdmitOutcome::kAdmitted);
  slots.admit(blocks, window);
  for (int32_t pos = 0; pos < kTokens; ++pos) {
    slots.prepare(blocks, window, pos, 1);
    pool.commit(blocks, tokens, pos + 1);
    const SeqBlocks* b[] = {&blocks};
    const SeqWindow* w[] = {&window};
    ASSERT_TRUE(slots.check_invariants(b, w).ok()) << pos;
    EXPECT_LE(slots.stats().num_pinned, WindowSlots::full_reserve(kWindow, kBlockSize)) << pos;
    EXPECT_EQ(window.lo, pos >= kWindow ? (pos - kWindow + 1) / kBlockSize : 0) << pos;
  }
  slots.release(blocks, window);
  pool.release(blocks);
  WindowSlotStats s = slots.stats();
  EXPECT_EQ(s.num_pinned, 0);
  EXPECT_EQ(s.num_reserved, 0);
  EXPECT_GT(s.num_evictions, 0);  // 16 blocks passed through 8 slots
  // Signed blocks keep their slots while no one needs them: the last window's.
  EXPECT_GT(s.num_cached, 0);
}

TEST(WindowSlotsTest, PrefixNeedsTheSlotsOfItsLastWindow) {
  constexpr int32_t kBlockSize = 4, kWindow = 6;
  WindowSlots slots(8, 32, kBlockSize, kWindow);
  KvPool pool(KvPoolConfig{32, kBlockSize, CachePolicy::kPaged});
  std::vector<int32_t> tokens(40);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i);
  const BlockSignature salt = make_cache_salt(1, "");
  SeqBlocks first;
  SeqWindow first_window;
  first_window.slots.assign(32, 0);
  ASSERT_EQ(pool.admit(tokens, 40, salt, &first, &slots), AdmitOutcome::kAdmitted);
  slots.admit(first, first_window);
  for (int32_t start = 0; start < 40; start += 8) {
    slots.prepare(first, first_window, start, 8);
    pool.commit(first, tokens, start + 8);
  }
  const std::vector<int32_t> table = first.table;  // released, its blocks stay cached
  slots.release(first, first_window);
  pool.release(first);
  // 8 slots for 10 blocks: blocks 0 and 1, the first out of a window, gave
  // their slots to blocks 8 and 9. A prefix whose last window (the blocks of
  // its last 5 positions) needs them is cut back to none.
  EXPECT_EQ(slots.usable_prefix_blocks(table), 10);
  EXPECT_EQ(slots.usable_prefix_blocks(std::span(table).first(4)), 4);
  EXPECT_EQ(slots.usable_prefix_blocks(std::span(table).first(3)), 0);
  EXPECT_EQ(slots.usable_prefix_blocks(std::span(table).first(2)), 0);

  SeqBlocks second;
  ASSERT_EQ(pool.admit(std::span(tokens).first(37), 45, salt, &second, &slots), AdmitOutcome::kAdmitted);
  EXPECT_EQ(second.num_prefix_tokens, 36);  // nine blocks: the last prompt token is computed
  SeqWindow second_window;
  second_window.slots.assign(32, 0);
  slots.admit(second, second_window);
  EXPECT_EQ(second_window.lo, (36 - kWindow + 1) / kBlockSize);
  EXPECT_EQ(second_window.hi, 9);
  const SeqBlocks* b[] = {&second};
  const SeqWindow* w[] = {&second_window};
  EXPECT_TRUE(slots.check_invariants(b, w).ok());
}

struct LiveSeq {
  SeqBlocks blocks;
  SeqWindow window;
  std::vector<int32_t> tokens;
  std::vector<uint64_t> content;  // [tokens] what position p's row must hold
  int32_t num_prompt = 0;
};

class RandomWindowTest : public ::testing::TestWithParam<CachePolicy> {
 protected:
  static constexpr int32_t kBlockSize = 4, kWindow = 10, kNumBlocks = 64, kNumSlots = 26;
  static constexpr size_t kMaxLive = 6;

  void SetUp() override {
    pool_ = std::make_unique<KvPool>(KvPoolConfig{kNumBlocks, kBlockSize, GetParam()});
    slots_ = std::make_unique<WindowSlots>(kNumSlots, kNumBlocks, kBlockSize, kWindow);
    rows_.assign(kNumSlots * kBlockSize, 0);
    for (int32_t len : {13, 30, 47}) {
      std::vector<int32_t> prefix;
      for (int32_t i = 0; i < len; ++i) prefix.push_back(static_cast<int32_t>(rng_() % 5));
      prefixes_.push_back(prefix);
    }
  }

  int32_t uniform(int32_t lo, int32_t hi) { return lo + static_cast<int32_t>(rng_() % static_cast<uint32_t>(hi - lo + 1)); }

  void check(int step) {
    std::vector<const SeqBlocks*> blocks;
    std::vector<const SeqWindow*> windows;
    for (const auto& s : live_) {
      blocks.push_back(&s->blocks);
      windows.push_back(&s->window);
    }
    Status pool_status = pool_->check_invariants(blocks);
    ASSERT_TRUE(pool_status.ok()) << "step " << step << ": " << pool_status.to_string();
    Status status = slots_->check_invariants(blocks, windows);
    ASSERT_TRUE(status.ok()) << "step " << step << ": " << status.to_string();
  }

  void admit() {
    auto seq = std::make_unique<LiveSeq>();
    if (rng_() % 4 != 0) seq->tokens = prefixes_[rng_() % prefixes_.size()];
    const int32_t suffix = uniform(1, 10);
    for (int32_t i = 0; i < suffix; ++i) seq->tokens.push_back(uniform(0, 2));
    seq->num_prompt = static_cast<int32_t>(seq->tokens.size());
    const int32_t max_total = seq->num_prompt + uniform(1, 40);
    while (static_cast<int32_t>(seq->tokens.size()) < max_total) seq->tokens.push_back(uniform(0, 2));
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : seq->tokens) seq->content.push_back(h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull);
    if (!slots_->can_admit(max_total)) return;
    seq->window.slots.assign(kNumBlocks, 0);
    const AdmitOutcome outcome = pool_->admit(std::span(seq->tokens).first(seq->num_prompt), max_total,
                                              make_cache_salt(1, ""), &seq->blocks, slots_.get());
    if (outcome != AdmitOutcome::kAdmitted) return;
    slots_->admit(seq->blocks, seq->window);
    longest_prefix_ = std::max(longest_prefix_, seq->blocks.num_prefix_tokens);
    live_.push_back(std::move(seq));
  }

  // One chunk of one sequence, as a forward pass runs it: write the chunk's
  // rows, then read each token's window.
  void compute(LiveSeq& seq) {
    SeqBlocks& b = seq.blocks;
    const int32_t start = b.num_computed_tokens, total = static_cast<int32_t>(seq.tokens.size());
    if (start == total) return;
    const int32_t n = slots_->max_chunk(seq.window, start, std::min(total - start, uniform(1, 4 * kBlockSize)));
    ASSERT_GE(n, 1);
    if (!pool_->ensure_capacity(b, start + n)) return;
    slots_->prepare(b, seq.window, start, n);
    const auto row = [&](int32_t p) -> uint64_t& {
      return rows_[static_cast<size_t>(seq.window.slots[static_cast<size_t>(p / kBlockSize)] * kBlockSize + p % kBlockSize)];
    };
    for (int32_t p = start; p < start + n; ++p) row(p) = seq.content[static_cast<size_t>(p)];
    for (int32_t p = start; p < start + n; ++p)
      for (int32_t q = std::max(0, p - kWindow + 1); q <= p; ++q)
        ASSERT_EQ(row(q), seq.content[static_cast<size_t>(q)]) << "position " << q << " read by " << p;
    pool_->commit(b, seq.tokens, start + n);
  }

  void release(size_t index) {
    LiveSeq& seq = *live_[index];
    pool_->commit(seq.blocks, seq.tokens, seq.blocks.num_computed_tokens);
    slots_->release(seq.blocks, seq.window);
    pool_->release(seq.blocks);
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(index));
  }

  void compact() {
    std::vector<SeqBlocks*> live;
    for (auto& s : live_) live.push_back(&s->blocks);
    std::vector<BlockMove> moves;
    pool_->compact(live, 0, &moves);
    for (const BlockMove& m : moves) slots_->move_block(m.src, m.dst);
  }

  std::mt19937_64 rng_{20261203};
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<WindowSlots> slots_;
  std::vector<uint64_t> rows_;  // [slots, block_size] what each row holds
  std::vector<std::vector<int32_t>> prefixes_;
  std::vector<std::unique_ptr<LiveSeq>> live_;
  int32_t longest_prefix_ = 0;
};

TEST_P(RandomWindowTest, EveryWindowReadsWhatItsSequenceWrote) {
  for (int step = 0; step < 8000; ++step) {
    const uint32_t dice = static_cast<uint32_t>(rng_() % 100);
    if (dice < 25 && live_.size() < kMaxLive) {
      ASSERT_NO_FATAL_FAILURE(admit());
    } else if (live_.empty()) {
      continue;
    } else if (dice < 85) {
      ASSERT_NO_FATAL_FAILURE(compute(*live_[rng_() % live_.size()]));
    } else if (dice < 88 && GetParam() == CachePolicy::kContiguous) {
      compact();
    } else {
      release(rng_() % live_.size());
    }
    ASSERT_NO_FATAL_FAILURE(check(step));
  }
  while (!live_.empty()) release(live_.size() - 1);
  ASSERT_NO_FATAL_FAILURE(check(-1));
  const WindowSlotStats s = slots_->stats();
  EXPECT_EQ(s.num_pinned, 0);
  EXPECT_EQ(s.num_reserved, 0);
  EXPECT_GT(s.num_evictions, 0);
  // Prefixes longer than the window were reused, their windows read back.
  EXPECT_GT(longest_prefix_, kWindow);
  RecordProperty("longest_prefix", longest_prefix_);
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, RandomWindowTest,
                         ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid),
                         [](const auto& info) { return std::string(cache_policy_name(info.param)); });

}  // namespace
}  // namespace zl
