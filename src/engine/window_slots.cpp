#include "engine/window_slots.h"

#include <algorithm>

#include "core/check.h"

namespace zl {
namespace {

constexpr int32_t kNone = -1;

int64_t charge(const SeqWindow& w) { return std::max(w.hi - w.lo, w.reserve); }

}  // namespace

WindowSlots::WindowSlots(int32_t num_slots, int32_t num_blocks, int32_t block_size, int32_t window)
    : num_slots_(num_slots),
      block_size_(block_size),
      window_(window),
      slot_of_block_(static_cast<size_t>(num_blocks), kNone),
      block_of_slot_(static_cast<size_t>(num_slots), kNone),
      pins_(static_cast<size_t>(num_slots), 0),
      lru_prev_(static_cast<size_t>(num_slots), kNone),
      lru_next_(static_cast<size_t>(num_slots), kNone) {
  CHECK(num_slots > 0 && block_size > 0 && window > 0) << "window slots need positive sizes";
  free_.reserve(static_cast<size_t>(num_slots));
  for (int32_t s = num_slots - 1; s >= 0; --s) free_.push_back(s);
}

// A decode at p pins the blocks of positions [p - window + 1, p]: window
// positions span at most ceil((window - 1) / block_size) + 1 blocks.
int32_t WindowSlots::full_reserve(int32_t window, int32_t block_size) {
  return (window - 1 + block_size - 1) / block_size + 1;
}

int32_t WindowSlots::reserve_for(int32_t max_total_tokens) const {
  return std::min(full_reserve(window_, block_size_), (max_total_tokens + block_size_ - 1) / block_size_);
}

// The first tokens to compute then start at position k * block_size, and
// read back to block first_block() of it.
int32_t WindowSlots::usable_prefix_blocks(std::span<const int32_t> prefix_blocks) const {
  const auto mapped = [&](int32_t i) { return slot_of_block_[static_cast<size_t>(prefix_blocks[static_cast<size_t>(i)])] != kNone; };
  for (int32_t k = static_cast<int32_t>(prefix_blocks.size()); k > 0; --k) {
    // Blocks of the window not mapped make every k that needs them unusable.
    int32_t i = k - 1;
    const int32_t lo = first_block(k * block_size_);
    while (i >= lo && mapped(i)) --i;
    if (i < lo) return k;
    k = i + 1;  // the loop's --k tries k = i next: block i is not in its window any more
  }
  return 0;
}

void WindowSlots::admit(const SeqBlocks& blocks, SeqWindow& w) {
  CHECK(w.lo == 0 && w.hi == 0 && w.reserve == 0) << "admit into a window that holds slots";
  w.reserve = reserve_for(blocks.max_total_tokens);
  reserved_ += w.reserve;
  CHECK_LE(reserved_, num_slots_) << "admitted past the window slots (can_admit)";
  const int32_t num_prefix_blocks = blocks.num_prefix_tokens / block_size_;
  if (num_prefix_blocks > 0) repin(blocks, w, first_block(blocks.num_prefix_tokens), num_prefix_blocks);
}

int32_t WindowSlots::max_chunk(const SeqWindow& w, int32_t start, int32_t want) const {
  const int64_t room = num_slots_ - (reserved_ - charge(w));  // pins this sequence may hold
  const int64_t last_token = (int64_t{first_block(start)} + room) * block_size_;
  return static_cast<int32_t>(std::clamp<int64_t>(last_token - start, 1, want));
}

// Pins [lo, hi) and unpins the rest of [w.lo, w.hi); both bounds only grow.
void WindowSlots::repin(const SeqBlocks& blocks, SeqWindow& w, int32_t lo, int32_t hi) {
  CHECK(lo >= w.lo && hi >= w.hi && hi <= static_cast<int32_t>(blocks.table.size()) &&
        hi <= static_cast<int32_t>(w.slots.size()))
      << "window slots: blocks [" << lo << ", " << hi << ") after [" << w.lo << ", " << w.hi << ")";
  for (int32_t i = w.lo; i < std::min(lo, w.hi); ++i) unpin(w.slots[static_cast<size_t>(i)]);
  for (int32_t i = std::max(lo, w.hi); i < hi; ++i) pin_block(blocks.table[static_cast<size_t>(i)], w, i);
  set_range(w, lo, hi);
}

void WindowSlots::set_range(SeqWindow& w, int32_t lo, int32_t hi) {
  reserved_ -= charge(w);
  w.lo = lo;
  w.hi = hi;
  reserved_ += charge(w);
  CHECK_LE(reserved_, num_slots_) << "a chunk pinned more window slots than max_chunk() allows";
}

void WindowSlots::pin_block(int32_t block, SeqWindow& w, int32_t index) {
  int32_t& slot = slot_of_block_[static_cast<size_t>(block)];
  if (slot == kNone) {
    slot = take_slot();
    block_of_slot_[static_cast<size_t>(slot)] = block;
  } else if (pins_[static_cast<size_t>(slot)] == 0) {
    lru_remove(slot);
  }
  if (pins_[static_cast<size_t>(slot)]++ == 0) ++num_pinned_;
  w.slots[static_cast<size_t>(index)] = slot;
}

void WindowSlots::unpin(int32_t slot) {
  if (--pins_[static_cast<size_t>(slot)] > 0) return;
  --num_pinned_;
  lru_push_back(slot);
}

// A free slot, else the least recently unpinned mapped one. One exists: the
// pins are fewer than the slots while a reservation has room.
int32_t WindowSlots::take_slot() {
  if (!free_.empty()) {
    const int32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  CHECK(lru_head_ != kNone) << "no window slot to take: every slot is pinned";
  const int32_t slot = lru_head_;
  lru_remove(slot);
  slot_of_block_[static_cast<size_t>(block_of_slot_[static_cast<size_t>(slot)])] = kNone;
  block_of_slot_[static_cast<size_t>(slot)] = kNone;
  ++num_evictions_;
  return slot;
}

// An unpinned, mapped slot becomes free.
void WindowSlots::unmap(int32_t slot) {
  lru_remove(slot);
  slot_of_block_[static_cast<size_t>(block_of_slot_[static_cast<size_t>(slot)])] = kNone;
  block_of_slot_[static_cast<size_t>(slot)] = kNone;
  free_.push_back(slot);
}

void WindowSlots::release(const SeqBlocks& blocks, SeqWindow& w) {
  for (int32_t i = w.lo; i < w.hi; ++i) {
    const int32_t slot = w.slots[static_cast<size_t>(i)];
    unpin(slot);
    // An unsigned block is never looked up again: its KV is garbage to the cache.
    if (i >= blocks.num_signed_blocks && pins_[static_cast<size_t>(slot)] == 0) unmap(slot);
  }
  reserved_ -= charge(w);
  w.lo = w.hi = w.reserve = 0;
}

void WindowSlots::move_block(int32_t src, int32_t dst) {
  const int32_t old = slot_of_block_[static_cast<size_t>(dst)];
  if (old != kNone) {  // dst was free or an evicted cached block: its slot is garbage
    CHECK_EQ(pins_[static_cast<size_t>(old)], 0) << "compaction moved onto a block in some window";
    unmap(old);
  }
  const int32_t slot = slot_of_block_[static_cast<size_t>(src)];
  if (slot == kNone) return;
  slot_of_block_[static_cast<size_t>(src)] = kNone;
  slot_of_block_[static_cast<size_t>(dst)] = slot;
  block_of_slot_[static_cast<size_t>(slot)] = dst;
}

void WindowSlots::lru_push_back(int32_t slot) {
  lru_prev_[static_cast<size_t>(slot)] = lru_tail_;
  lru_next_[static_cast<size_t>(slot)] = kNone;
  (lru_tail_ == kNone ? lru_head_ : lru_next_[static_cast<size_t>(lru_tail_)]) = slot;
  lru_tail_ = slot;
}

void WindowSlots::lru_remove(int32_t slot) {
  const int32_t prev = lru_prev_[static_cast<size_t>(slot)], next = lru_next_[static_cast<size_t>(slot)];
  (prev == kNone ? lru_head_ : lru_next_[static_cast<size_t>(prev)]) = next;
  (next == kNone ? lru_tail_ : lru_prev_[static_cast<size_t>(next)]) = prev;
  lru_prev_[static_cast<size_t>(slot)] = lru_next_[static_cast<size_t>(slot)] = kNone;
}

WindowSlotStats WindowSlots::stats() const {
  WindowSlotStats s;
  s.num_slots = num_slots_;
  s.num_pinned = num_pinned_;
  s.num_cached = num_slots_ - num_pinned_ - static_cast<int32_t>(free_.size());
  s.num_reserved = static_cast<int32_t>(reserved_);
  s.num_evictions = num_evictions_;
  return s;
}

Status WindowSlots::check_invariants(std::span<const SeqBlocks* const> blocks,
                                     std::span<const SeqWindow* const> windows) const {
  if (blocks.size() != windows.size()) return invalid_argument("window check: ", blocks.size(), " tables, ", windows.size(), " windows");
  std::vector<int32_t> pins(static_cast<size_t>(num_slots_), 0);
  int64_t reserved = 0;
  for (size_t k = 0; k < windows.size(); ++k) {
    const SeqWindow& w = *windows[k];
    reserved += charge(w);
    for (int32_t i = w.lo; i < w.hi; ++i) {
      const int32_t slot = w.slots[static_cast<size_t>(i)];
      const int32_t block = blocks[k]->table[static_cast<size_t>(i)];
      if (slot_of_block_[static_cast<size_t>(block)] != slot)
        return internal_error("sequence ", k, " block ", i, " (id ", block, ") maps to slot ",
                              slot_of_block_[static_cast<size_t>(block)], ", its window says ", slot);
      pins[static_cast<size_t>(slot)]++;
    }
  }
  if (reserved != reserved_) return internal_error("window slots: ", reserved_, " reserved, the sequences hold ", reserved);
  if (reserved_ > num_slots_) return internal_error("window slots: ", reserved_, " reserved of ", num_slots_);
  std::vector<uint8_t> on_list(static_cast<size_t>(num_slots_), 0);
  for (int32_t s = lru_head_; s != kNone; s = lru_next_[static_cast<size_t>(s)]) on_list[static_cast<size_t>(s)] |= 1;
  for (int32_t s : free_) on_list[static_cast<size_t>(s)] |= 2;
  for (int32_t s = 0; s < num_slots_; ++s) {
    const size_t i = static_cast<size_t>(s);
    if (pins[i] != pins_[i]) return internal_error("slot ", s, " has ", pins_[i], " pins, the sequences hold ", pins[i]);
    const int32_t block = block_of_slot_[i];
    const uint8_t want = block == kNone ? 2 : pins[i] == 0 ? 1 : 0;
    if (on_list[i] != want) return internal_error("slot ", s, " is on lists ", int{on_list[i]}, ", expected ", int{want});
    if (block != kNone && slot_of_block_[static_cast<size_t>(block)] != s)
      return internal_error("slot ", s, " names block ", block, " which maps to ", slot_of_block_[static_cast<size_t>(block)]);
  }
  return ok_status();
}

}  // namespace zl
