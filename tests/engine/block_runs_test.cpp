#include "engine/block_runs.h"

#include <gtest/gtest.h>

#include <random>

namespace zl {
namespace {

void expect_run(BlockRun run, int32_t start, int32_t len) {
  EXPECT_EQ(run.start, start);
  EXPECT_EQ(run.len, len);
}

TEST(BlockRunsTest, InsertCoalescesWithBothNeighbours) {
  BlockRuns runs(10);
  runs.insert(2);
  runs.insert(4);
  EXPECT_EQ(runs.num_runs(), 2);
  runs.insert(3);
  EXPECT_EQ(runs.num_runs(), 1);
  expect_run(runs.run_containing(4), 2, 3);
  EXPECT_EQ(runs.num_members(), 3);
  EXPECT_EQ(runs.largest_len(), 3);
}

TEST(BlockRunsTest, EraseSplitsARun) {
  BlockRuns runs(8);
  for (int32_t b = 0; b < 8; ++b) runs.insert(b);
  runs.erase(3);
  EXPECT_EQ(runs.num_runs(), 2);
  expect_run(runs.run_containing(0), 0, 3);
  expect_run(runs.run_containing(7), 4, 4);
  runs.erase_range(4, 2);
  expect_run(runs.run_containing(6), 6, 2);
  EXPECT_EQ(runs.num_members(), 5);
  runs.erase_range(0, 3);
  EXPECT_EQ(runs.num_runs(), 1);
  EXPECT_FALSE(runs.contains(0));
  EXPECT_TRUE(runs.contains(7));
}

TEST(BlockRunsTest, BestFitIsTheShortestLongEnoughRun) {
  BlockRuns runs(20);
  for (int32_t b : {0, 1, 2, 3, 4, 6, 7, 9, 10, 11, 13}) runs.insert(b);
  // Runs: [0,5) [6,8) [9,12) [13,14).
  expect_run(runs.best_fit(2), 6, 2);
  expect_run(runs.best_fit(3), 9, 3);
  expect_run(runs.best_fit(4), 0, 5);
  EXPECT_EQ(runs.best_fit(6).len, 0);
  expect_run(runs.smallest(), 13, 1);
  EXPECT_EQ(runs.largest_len(), 5);
}

TEST(BlockRunsTest, EmptySet) {
  BlockRuns runs(4);
  EXPECT_EQ(runs.smallest().len, 0);
  EXPECT_EQ(runs.best_fit(1).len, 0);
  EXPECT_EQ(runs.largest_len(), 0);
  EXPECT_TRUE(runs.check(std::vector<uint8_t>(4, 0)).ok());
}

TEST(BlockRunsTest, RandomOperationsKeepMaximalRuns) {
  constexpr int32_t kNumBlocks = 64;
  BlockRuns runs(kNumBlocks);
  std::vector<uint8_t> members(kNumBlocks, 0);
  std::mt19937 rng(12345);
  for (int step = 0; step < 3000; ++step) {
    int32_t b = static_cast<int32_t>(rng() % kNumBlocks);
    if (members[b]) {
      BlockRun run = runs.run_containing(b);
      int32_t len = 1 + static_cast<int32_t>(rng() % (run.end() - b));
      runs.erase_range(b, len);
      for (int32_t i = b; i < b + len; ++i) members[i] = 0;
    } else {
      // A range of non-members from b, as release() inserts a sequence's extent.
      int32_t len = 1 + static_cast<int32_t>(rng() % 4);
      for (int32_t i = 1; i < len; ++i) {
        if (b + i >= kNumBlocks || members[b + i]) len = i;
      }
      runs.insert_range(b, len);
      for (int32_t i = b; i < b + len; ++i) members[i] = 1;
    }
    Status s = runs.check(members);
    ASSERT_TRUE(s.ok()) << "step " << step << ": " << s.to_string();
  }
}

}  // namespace
}  // namespace zl
