// BlockRuns: a set of block ids kept as maximal runs of consecutive ids, so
// the KV pool can find a contiguous extent best-fit by binary search and
// report the largest run (external fragmentation) in O(1). Every insert
// coalesces with its neighbours and every erase splits, so the runs are
// always maximal and never adjacent.
//
// The runs are two sorted arrays (by start; by length, then start), not
// trees: the pool's calls come right after a forward pass has evicted them
// from every cache, and a search in a red-black tree of a thousand runs is
// ten dependent misses, each of its dozen tree operations a call. Released
// sequences leave a free block between cached ones, so a thousand runs is
// common: one release took ~10 µs in the free set's trees. In an array the
// searches of one call share their first probes' lines, and an insert or
// erase shifts the tail, streaming (in the worst case, every other block a
// run, 8 bytes a run for half the pool's blocks). Both arrays are reserved
// for the most runs there can be, so nothing allocates after construction.
#pragma once

#include <cstdint>
#include <vector>

#include "zerolayer/status.h"

namespace zl {

struct BlockRun {
  int32_t start = 0;
  int32_t len = 0;  // 0: no run
  int32_t end() const { return start + len; }
};

class BlockRuns {
 public:
  // Starts empty: no block of [0, num_blocks) is a member.
  explicit BlockRuns(int32_t num_blocks);
  BlockRuns(const BlockRuns&) = delete;
  BlockRuns& operator=(const BlockRuns&) = delete;

  bool contains(int32_t block) const { return member_[block] != 0; }
  int32_t num_members() const { return num_members_; }
  int32_t num_runs() const { return static_cast<int32_t>(by_start_.size()); }

  // block must not be a member.
  void insert(int32_t block);
  // [start, start + len) must all be non-members: one coalescing for the lot.
  void insert_range(int32_t start, int32_t len);
  // block must be a member.
  void erase(int32_t block);
  // [start, start + len) must all be members (hence within one run).
  void erase_range(int32_t start, int32_t len);

  // The run holding a member block.
  BlockRun run_containing(int32_t block) const;
  // The shortest run of at least min_len blocks (lowest start among equals);
  // len 0 when there is none.
  BlockRun best_fit(int32_t min_len) const;
  // The shortest run (len 0 when empty), for taking single blocks without
  // cutting into long runs.
  BlockRun smallest() const;
  int32_t largest_len() const;

  // Tests: the runs are exactly the maximal runs of `expected` (one flag per
  // block) and the indexes agree with each other.
  Status check(const std::vector<uint8_t>& expected) const;

 private:
  // How many runs start at or before `block` (by_start_'s upper bound).
  size_t runs_starting_by(int32_t block) const;
  // The index in by_start_ of the run holding member `block`.
  size_t index_of(int32_t block) const;
  // by_len_ gains or loses `run` (len > 0).
  void add_by_len(BlockRun run);
  void remove_by_len(BlockRun run);

  std::vector<uint8_t> member_;
  int32_t num_members_ = 0;
  std::vector<BlockRun> by_start_;  // ascending start
  std::vector<BlockRun> by_len_;    // ascending (len, start)
};

}  // namespace zl
