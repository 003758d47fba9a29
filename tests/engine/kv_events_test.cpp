// KV-cache events: the engine-to-publisher ring keeps order and drops (and
// counts) what does not fit; the KV pool reports each block its prefix index
// gains, with its parent's signature and its tokens, and each it evicts.
// The wire format is checked against the msgpack package in
// tests/python/test_kv_events.py.
#include "engine/kv_events.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include "engine/kv_pool.h"

namespace zl {
namespace {

constexpr int32_t kBlockSize = 4;

std::vector<int32_t> tokens_from(int32_t first, int32_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<KvEvent> pop_all(KvEventQueue& queue) {
  std::vector<KvEvent> events;
  while (queue.pop(events, 7) > 0) {
  }
  return events;
}

TEST(KvEventQueue, KeepsOrderAndCountsWhatDoesNotFit) {
  KvEventQueue queue(kBlockSize, 0);  // the smallest ring: 64 records
  ASSERT_EQ(queue.capacity(), 64u);
  BlockSignature previous;
  for (int32_t i = 0; i < 65; ++i) {
    const BlockSignature s{uint64_t(i) + 1, uint64_t(i) * 7};
    const std::vector<int32_t> t = tokens_from(i * 10, kBlockSize);
    if (i % 5 == 4) queue.removed(s);
    else queue.stored(s, i == 0 ? nullptr : &previous, t.data());
    previous = s;
  }
  EXPECT_EQ(queue.num_dropped(), 1u);
  const std::vector<KvEvent> events = pop_all(queue);
  ASSERT_EQ(events.size(), 64u);
  for (int32_t i = 0; i < 64; ++i) {
    const KvEvent& e = events[size_t(i)];
    EXPECT_EQ(e.signature.low, uint64_t(i) + 1);
    if (i % 5 == 4) {
      EXPECT_EQ(e.kind, KvEvent::Kind::kRemoved);
      EXPECT_TRUE(e.tokens.empty());
      continue;
    }
    EXPECT_EQ(e.kind, KvEvent::Kind::kStored);
    EXPECT_EQ(e.tokens, tokens_from(i * 10, kBlockSize));
    EXPECT_EQ(e.has_parent, i != 0);
    if (i > 0) {
      EXPECT_EQ(e.parent.low, uint64_t(i));
    }
  }
  // Room again once read.
  const std::vector<int32_t> t = tokens_from(0, kBlockSize);
  queue.stored(BlockSignature{99, 0}, nullptr, t.data());
  EXPECT_EQ(pop_all(queue).size(), 1u);
  EXPECT_EQ(queue.num_dropped(), 1u);
}

class KvPoolEventsTest : public ::testing::Test {
 protected:
  KvPoolEventsTest() : pool_(KvPoolConfig{8, kBlockSize, CachePolicy::kPaged}), queue_(kBlockSize, 1 << 16) {
    pool_.set_event_queue(&queue_);
    seqs_.reserve(16);
  }
  SeqBlocks& run(const std::vector<int32_t>& prompt) {
    SeqBlocks& seq = seqs_.emplace_back();
    EXPECT_EQ(pool_.admit(prompt, static_cast<int32_t>(prompt.size()), salt_, &seq), AdmitOutcome::kAdmitted);
    EXPECT_TRUE(pool_.ensure_capacity(seq, static_cast<int32_t>(prompt.size())));
    pool_.commit(seq, prompt, static_cast<int32_t>(prompt.size()));
    return seq;
  }

  KvPool pool_;
  KvEventQueue queue_;
  BlockSignature salt_ = make_cache_salt(7, "");
  std::vector<SeqBlocks> seqs_;
};

TEST_F(KvPoolEventsTest, StoredBlocksChainToTheirParents) {
  const std::vector<int32_t> prompt = tokens_from(100, 10);  // two full blocks and a partial one
  run(prompt);
  std::vector<KvEvent> events = pop_all(queue_);
  ASSERT_EQ(events.size(), 2u);
  const BlockSignature first = sign_block(BlockSignature{}, std::span(prompt).first(4), salt_);
  EXPECT_EQ(events[0].signature, first);
  EXPECT_FALSE(events[0].has_parent);
  EXPECT_EQ(events[0].tokens, tokens_from(100, 4));
  EXPECT_EQ(events[1].signature, sign_block(first, std::span(prompt).subspan(4, 4), salt_));
  EXPECT_TRUE(events[1].has_parent);
  EXPECT_EQ(events[1].parent, first);
  EXPECT_EQ(events[1].tokens, tokens_from(104, 4));

  // A second prompt sharing the first block: only its own new block is news.
  std::vector<int32_t> other = tokens_from(100, 4);
  for (int32_t t : tokens_from(500, 5)) other.push_back(t);
  run(other);
  events = pop_all(queue_);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].parent, first);
  EXPECT_EQ(events[0].tokens, tokens_from(500, 4));
}

TEST_F(KvPoolEventsTest, EvictedBlocksAreRemovedOnce) {
  std::set<std::pair<uint64_t, uint64_t>> stored;
  for (int32_t round = 0; round < 6; ++round) {
    SeqBlocks& seq = run(tokens_from(1000 * (round + 1), 12));  // 3 blocks of the 8, all different
    pool_.release(seq);
    for (const KvEvent& e : pop_all(queue_)) {
      const auto key = std::make_pair(e.signature.low, e.signature.high);
      if (e.kind == KvEvent::Kind::kStored) {
        EXPECT_TRUE(stored.insert(key).second) << "stored twice";
      } else {
        EXPECT_EQ(stored.erase(key), 1u) << "removed a block never stored";
      }
    }
  }
  // What the index still holds is exactly what was stored and not removed.
  EXPECT_EQ(static_cast<int64_t>(stored.size()), pool_.stats().num_live_signatures);
  EXPECT_LE(stored.size(), 8u);
  EXPECT_EQ(queue_.num_dropped(), 0u);
}

}  // namespace
}  // namespace zl
