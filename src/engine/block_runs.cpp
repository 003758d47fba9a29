#include "engine/block_runs.h"

#include <algorithm>
#include <climits>
#include <iterator>

#include "core/check.h"

namespace zl {

namespace {

bool shorter(const BlockRun& a, const BlockRun& b) { return a.len < b.len || (a.len == b.len && a.start < b.start); }

}  // namespace

BlockRuns::BlockRuns(int32_t num_blocks) : member_(static_cast<size_t>(num_blocks), 0) {
  // The most runs there can be: every other block a member.
  const size_t max_runs = static_cast<size_t>(num_blocks + 1) / 2;
  by_start_.reserve(max_runs);
  by_len_.reserve(max_runs);
}

size_t BlockRuns::runs_starting_by(int32_t block) const {
  auto it = std::upper_bound(by_start_.begin(), by_start_.end(), block,
                             [](int32_t b, const BlockRun& run) { return b < run.start; });
  return static_cast<size_t>(it - by_start_.begin());
}

size_t BlockRuns::index_of(int32_t block) const {
  CHECK(member_[block]) << "block " << block << " is not in the run set";
  const size_t n = runs_starting_by(block);
  CHECK(n > 0 && block < by_start_[n - 1].end()) << "run index lost block " << block;
  return n - 1;
}

void BlockRuns::add_by_len(BlockRun run) {
  by_len_.insert(std::lower_bound(by_len_.begin(), by_len_.end(), run, shorter), run);
}

void BlockRuns::remove_by_len(BlockRun run) {
  auto it = std::lower_bound(by_len_.begin(), by_len_.end(), run, shorter);
  CHECK(it != by_len_.end() && it->start == run.start && it->len == run.len)
      << "length index lost the run [" << run.start << ", " << run.end() << ")";
  by_len_.erase(it);
}

void BlockRuns::insert(int32_t block) { insert_range(block, 1); }

void BlockRuns::insert_range(int32_t start, int32_t len) {
  CHECK(len > 0) << "insert_range of " << len << " blocks";
  for (int32_t b = start; b < start + len; ++b) {
    CHECK(!member_[b]) << "block " << b << " is already in the run set";
    member_[b] = 1;
  }
  num_members_ += len;
  // The first run after the new blocks, and whether it and the one before
  // them touch them.
  auto next = by_start_.begin() + static_cast<std::ptrdiff_t>(runs_starting_by(start));
  const bool joins_left = next != by_start_.begin() && std::prev(next)->end() == start;
  const bool joins_right = next != by_start_.end() && next->start == start + len;
  BlockRun merged{start, len};
  if (joins_left) {
    remove_by_len(*std::prev(next));
    merged.start = std::prev(next)->start;
    merged.len += std::prev(next)->len;
  }
  if (joins_right) {
    remove_by_len(*next);
    merged.len += next->len;
  }
  add_by_len(merged);
  if (joins_left) {
    *std::prev(next) = merged;
    if (joins_right) by_start_.erase(next);
  } else if (joins_right) {
    *next = merged;
  } else {
    by_start_.insert(next, merged);
  }
}

void BlockRuns::erase(int32_t block) { erase_range(block, 1); }

void BlockRuns::erase_range(int32_t start, int32_t len) {
  CHECK(len > 0) << "erase_range of " << len << " blocks";
  const size_t i = index_of(start);
  const BlockRun run = by_start_[i];
  CHECK(start + len <= run.end()) << "blocks [" << start << ", " << start + len
                                  << ") are not all in the run set";
  const BlockRun left{run.start, start - run.start}, right{start + len, run.end() - (start + len)};
  remove_by_len(run);
  if (left.len > 0) add_by_len(left);
  if (right.len > 0) add_by_len(right);
  const auto at = by_start_.begin() + static_cast<std::ptrdiff_t>(i);
  if (left.len > 0) {
    *at = left;
    if (right.len > 0) by_start_.insert(at + 1, right);
  } else if (right.len > 0) {
    *at = right;
  } else {
    by_start_.erase(at);
  }
  for (int32_t b = start; b < start + len; ++b) member_[b] = 0;
  num_members_ -= len;
}

BlockRun BlockRuns::run_containing(int32_t block) const { return by_start_[index_of(block)]; }

BlockRun BlockRuns::best_fit(int32_t min_len) const {
  auto it = std::lower_bound(by_len_.begin(), by_len_.end(), BlockRun{INT32_MIN, min_len}, shorter);
  return it == by_len_.end() ? BlockRun{} : *it;
}

BlockRun BlockRuns::smallest() const { return by_len_.empty() ? BlockRun{} : by_len_.front(); }

int32_t BlockRuns::largest_len() const { return by_len_.empty() ? 0 : by_len_.back().len; }

Status BlockRuns::check(const std::vector<uint8_t>& expected) const {
  if (expected.size() != member_.size()) {
    return internal_error("run set covers ", member_.size(), " blocks, expected ", expected.size());
  }
  if (by_start_.size() != by_len_.size()) {
    return internal_error("run set has ", by_start_.size(), " runs by start but ", by_len_.size(),
                          " by length");
  }
  if (!std::is_sorted(by_len_.begin(), by_len_.end(), shorter)) return internal_error("length index out of order");
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
    if (run == by_start_.end() || run->start != b || run->len != end - b) {
      return internal_error("run set lacks the maximal run [", b, ", ", end, ")");
    }
    if (!std::binary_search(by_len_.begin(), by_len_.end(), *run, shorter)) {
      return internal_error("run [", b, ", ", end, ") is missing from the length index");
    }
    num_members += end - b;
    ++run;
  }
  if (run != by_start_.end()) return internal_error("run set has a stray run at ", run->start);
  if (num_members != num_members_) {
    return internal_error("run set counts ", num_members_, " members, holds ", num_members);
  }
  return ok_status();
}

}  // namespace zl
