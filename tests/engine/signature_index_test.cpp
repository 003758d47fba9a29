// SignatureIndex: insert/find/remap/erase, clusters of colliding home slots
// (signatures built to share their low bits, which pick the slot), a table
// filled to max_entries, and random operations against std::unordered_map.
#include "engine/signature_index.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace zl {
namespace {

struct SignatureHash {
  size_t operator()(const BlockSignature& s) const { return static_cast<size_t>(s.low ^ s.high); }
};

TEST(SignatureIndexTest, SizesTableToTwiceTheEntriesRoundedUp) {
  EXPECT_EQ(SignatureIndex(1).num_slots(), 2);
  EXPECT_EQ(SignatureIndex(4).num_slots(), 8);
  EXPECT_EQ(SignatureIndex(5).num_slots(), 16);
  EXPECT_EQ(SignatureIndex(1000).num_slots(), 2048);
}

TEST(SignatureIndexTest, InsertFindRemapErase) {
  SignatureIndex index(8);
  const BlockSignature a{1, 2}, b{3, 4};
  EXPECT_EQ(index.find(a), -1);
  EXPECT_TRUE(index.insert(a, 5));
  EXPECT_TRUE(index.insert(b, 0));
  EXPECT_FALSE(index.insert(a, 6));  // the first entry wins
  EXPECT_EQ(index.find(a), 5);
  EXPECT_EQ(index.find(b), 0);
  EXPECT_EQ(index.find(BlockSignature{1, 3}), -1);  // same low half, other signature
  EXPECT_EQ(index.size(), 2);
  index.remap(a, 7);
  EXPECT_EQ(index.find(a), 7);
  EXPECT_TRUE(index.erase(a));
  EXPECT_FALSE(index.erase(a));
  EXPECT_EQ(index.find(a), -1);
  EXPECT_EQ(index.find(b), 0);
  EXPECT_EQ(index.size(), 1);
}

// Signatures with equal low halves all start probing at one slot: erasing
// from the middle of the cluster must leave every other one reachable.
TEST(SignatureIndexTest, CollidingSignaturesStayReachableAfterErase) {
  SignatureIndex index(16);
  std::vector<BlockSignature> cluster;
  for (uint64_t i = 0; i < 10; ++i) cluster.push_back(BlockSignature{7, i});
  // Home one slot after the cluster's: they interleave with it.
  for (uint64_t i = 0; i < 4; ++i) cluster.push_back(BlockSignature{8 + 32 * i, 100 + i});
  for (size_t i = 0; i < cluster.size(); ++i) ASSERT_TRUE(index.insert(cluster[i], static_cast<int32_t>(i)));
  for (size_t erased : {3u, 0u, 11u, 9u}) {
    ASSERT_TRUE(index.erase(cluster[erased]));
    cluster[erased] = BlockSignature{~0ull, ~0ull};  // never inserted
    for (size_t i = 0; i < cluster.size(); ++i) {
      EXPECT_EQ(index.find(cluster[i]), cluster[i].low == ~0ull ? -1 : static_cast<int32_t>(i)) << i;
    }
  }
  EXPECT_EQ(index.size(), 10);
}

// A cluster that wraps from the last slot to the first.
TEST(SignatureIndexTest, ClusterWrapsAroundTheTableEnd) {
  SignatureIndex index(4);  // 8 slots
  const BlockSignature s[4] = {{6, 0}, {7, 0}, {6, 1}, {7, 1}};  // slots 6, 7, 0, 1
  for (int32_t i = 0; i < 4; ++i) ASSERT_TRUE(index.insert(s[i], i));
  ASSERT_TRUE(index.erase(s[0]));
  EXPECT_EQ(index.find(s[1]), 1);
  EXPECT_EQ(index.find(s[2]), 2);
  EXPECT_EQ(index.find(s[3]), 3);
  ASSERT_TRUE(index.erase(s[1]));
  EXPECT_EQ(index.find(s[2]), 2);
  EXPECT_EQ(index.find(s[3]), 3);
}

TEST(SignatureIndexTest, HoldsExactlyMaxEntries) {
  constexpr int32_t kMax = 100;
  SignatureIndex index(kMax);
  for (int32_t i = 0; i < kMax; ++i) ASSERT_TRUE(index.insert(BlockSignature{uint64_t(i) * 64, 1}, i));
  EXPECT_EQ(index.size(), kMax);
  for (int32_t i = 0; i < kMax; ++i) EXPECT_EQ(index.find(BlockSignature{uint64_t(i) * 64, 1}), i);
  // Full: a present signature is still refused without a fuss; a new one is a bug.
  EXPECT_FALSE(index.insert(BlockSignature{0, 1}, 5));
  EXPECT_DEATH((void)index.insert(BlockSignature{1, 1}, 5), "signature index full");
  // Emptied, it takes a full load again.
  for (int32_t i = 0; i < kMax; ++i) ASSERT_TRUE(index.erase(BlockSignature{uint64_t(i) * 64, 1}));
  EXPECT_EQ(index.size(), 0);
  for (int32_t i = 0; i < kMax; ++i) ASSERT_TRUE(index.insert(BlockSignature{uint64_t(i), 2}, i));
  EXPECT_EQ(index.find(BlockSignature{5, 2}), 5);
}

TEST(SignatureIndexTest, RemapOfAbsentSignatureIsABug) {
  SignatureIndex index(4);
  EXPECT_DEATH(index.remap(BlockSignature{1, 2}, 3), "not in the index");
}

// 100k random operations on keys from a small set (so finds hit and erases
// find something), with few distinct low bits (so clusters form), checked
// against std::unordered_map after every operation that changes the table.
TEST(SignatureIndexTest, RandomOperationsMatchUnorderedMap) {
  constexpr int32_t kMax = 200;
  SignatureIndex index(kMax);
  std::unordered_map<BlockSignature, int32_t, SignatureHash> oracle;
  std::mt19937_64 rng(99);
  auto random_key = [&] { return BlockSignature{rng() % 64 * 7, rng() % 8}; };  // 512 keys
  int64_t num_erased = 0;
  for (int op = 0; op < 100'000; ++op) {
    BlockSignature key = random_key();
    int32_t block = static_cast<int32_t>(rng() % 1000);
    switch (rng() % 4) {
      case 0:
      case 1:
        if (oracle.size() < kMax) {
          bool inserted = oracle.try_emplace(key, block).second;
          ASSERT_EQ(index.insert(key, block), inserted) << "op " << op;
        }
        break;
      case 2: {
        bool present = oracle.erase(key) > 0;
        num_erased += present ? 1 : 0;
        ASSERT_EQ(index.erase(key), present) << "op " << op;
        break;
      }
      case 3:
        if (auto it = oracle.find(key); it != oracle.end()) {
          it->second = block;
          index.remap(key, block);
        }
        break;
    }
    ASSERT_EQ(index.size(), static_cast<int32_t>(oracle.size())) << "op " << op;
    BlockSignature probe = random_key();
    auto it = oracle.find(probe);
    ASSERT_EQ(index.find(probe), it == oracle.end() ? -1 : it->second) << "op " << op;
  }
  for (const auto& [key, block] : oracle) EXPECT_EQ(index.find(key), block);
  EXPECT_GT(num_erased, 5'000);
  EXPECT_GT(oracle.size(), 100u);
}

}  // namespace
}  // namespace zl
