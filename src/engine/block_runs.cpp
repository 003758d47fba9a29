#include "engine/block_runs.h"

#include "core/check.h"

namespace zl {

BlockRuns::BlockRuns(int32_t num_blocks)
    : member_(static_cast<size_t>(num_blocks), 0), by_start_(&node_pool_), by_len_(&node_pool_) {
  // Fill the node pool for the most runs there can be (every other block a
  // member, plus one while an erase splits a run), so that no later insert or
  // erase reaches the system allocator, whatever the workload.
  const int32_t max_runs = (num_blocks + 1) / 2 + 1;
  for (int32_t i = 0; i < max_runs; ++i) add_run(2 * i, 1);
  for (int32_t i = 0; i < max_runs; ++i) remove_run(2 * i, 1);
}

void BlockRuns::add_run(int32_t start, int32_t len) {
  if (len <= 0) return;
  by_start_.emplace(start, len);
  by_len_.emplace(len, start);
}

void BlockRuns::remove_run(int32_t start, int32_t len) {
  by_start_.erase(start);
  by_len_.erase({len, start});
}

void BlockRuns::insert(int32_t block) { insert_range(block, 1); }

void BlockRuns::insert_range(int32_t start, int32_t len) {
  CHECK(len > 0) << "insert_range of " << len << " blocks";
  for (int32_t b = start; b < start + len; ++b) {
    CHECK(!member_[b]) << "block " << b << " is already in the run set";
    member_[b] = 1;
  }
  int32_t run_start = start, run_end = start + len;
  if (start > 0 && member_[start - 1]) {
    BlockRun left = run_containing(start - 1);
    remove_run(left.start, left.len);
    run_start = left.start;
  }
  const int32_t num_blocks = static_cast<int32_t>(member_.size());
  if (run_end < num_blocks && member_[run_end]) {
    auto right = by_start_.find(run_end);
    CHECK(right != by_start_.end()) << "run index lost the run at " << run_end;
    const int32_t right_len = right->second;
    remove_run(run_end, right_len);
    run_end += right_len;
  }
  add_run(run_start, run_end - run_start);
  num_members_ += len;
}

void BlockRuns::erase(int32_t block) { erase_range(block, 1); }

void BlockRuns::erase_range(int32_t start, int32_t len) {
  CHECK(len > 0) << "erase_range of " << len << " blocks";
  BlockRun run = run_containing(start);
  CHECK(start + len <= run.end()) << "blocks [" << start << ", " << start + len
                                  << ") are not all in the run set";
  remove_run(run.start, run.len);
  add_run(run.start, start - run.start);
  add_run(start + len, run.end() - (start + len));
  for (int32_t b = start; b < start + len; ++b) member_[b] = 0;
  num_members_ -= len;
}

BlockRun BlockRuns::run_containing(int32_t block) const {
  CHECK(member_[block]) << "block " << block << " is not in the run set";
  auto it = by_start_.upper_bound(block);
  CHECK(it != by_start_.begin()) << "run index lost block " << block;
  --it;
  CHECK(block < it->first + it->second) << "run index lost block " << block;
  return BlockRun{it->first, it->second};
}

BlockRun BlockRuns::best_fit(int32_t min_len) const {
  auto it = by_len_.lower_bound({min_len, 0});
  if (it == by_len_.end()) return BlockRun{};
  return BlockRun{it->second, it->first};
}

BlockRun BlockRuns::smallest() const {
  if (by_len_.empty()) return BlockRun{};
  return BlockRun{by_len_.begin()->second, by_len_.begin()->first};
}

int32_t BlockRuns::largest_len() const { return by_len_.empty() ? 0 : by_len_.rbegin()->first; }

Status BlockRuns::check(const std::vector<uint8_t>& expected) const {
  if (expected.size() != member_.size()) {
    return internal_error("run set covers ", member_.size(), " blocks, expected ", expected.size());
  }
  if (by_start_.size() != by_len_.size()) {
    return internal_error("run set has ", by_start_.size(), " runs by start but ", by_len_.size(),
                          " by length");
  }
  auto run = by_start_.begin();
  int32_t num_members = 0;
  const int32_t num_blocks = static_cast<int32_t>(member_.size());
  for (int32_t b = 0; b < num_blocks; ++b) {
    if ((member_[b] != 0) != (expected[b] != 0)) {
      return internal_error("run set membership of block ", b, " is ", int(member_[b]));
    }
    if (!expected[b] || (b > 0 && expected[b - 1])) continue;
    int32_t end = b;
    while (end < num_blocks && expected[end]) ++end;
    if (run == by_start_.end() || run->first != b || run->second != end - b) {
      return internal_error("run set lacks the maximal run [", b, ", ", end, ")");
    }
    if (!by_len_.count({end - b, b})) {
      return internal_error("run [", b, ", ", end, ") is missing from the length index");
    }
    num_members += end - b;
    ++run;
  }
  if (run != by_start_.end()) return internal_error("run set has a stray run at ", run->first);
  if (num_members != num_members_) {
    return internal_error("run set counts ", num_members_, " members, holds ", num_members);
  }
  return ok_status();
}

}  // namespace zl
