// KV memory of the sliding-window layers. A windowed layer's token at
// position p reads positions (p - window, p] only, so a sequence needs that
// layer's KV for its last `window` positions, not for all of them: Gemma 3
// keeps 5 of every 6 layers at 512 positions however long the sequence.
//
// The KV pool (kv_pool.h) names a sequence's blocks and their signatures for
// every layer; the full-attention layers store block b's KV at b. The
// windowed layers store it in a slot, one of a smaller arena, mapped to b
// while b is within the window of a sequence that holds it (pinned) and
// afterwards for as long as no one needs the slot (cached, least recently
// unpinned first to go). So a later prompt that shares the prefix reuses it
// when the slots of its last window of blocks are still mapped, however long
// the prefix; otherwise it reuses a shorter prefix (usable_prefix_blocks()).
//
// Memory never runs out for an admitted sequence, under every cache policy:
// admission reserves the slots a sequence pins while decoding (its window of
// blocks, within its extent), and a prefill chunk may pin more only while
// they are free or cached (max_chunk()). Reserved counts each sequence's pins
// separately, so shared slots only make the bound loose.
//
// A sequence's slot table is indexed like its block table (slot of block i);
// only entries [lo, hi) are meaningful. Entries change only when pinned, so a
// forward pass still reading a sequence's window while the engine plans the
// next one reads entries the engine does not write. Block ids change only by
// compaction (move_block()).
//
// Threading: the engine thread's, like the KV pool; allocates only at
// construction.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv_pool.h"
#include "zerolayer/status.h"

namespace zl {

struct SeqWindow {
  std::vector<int32_t> slots;  // slots[i]: the slot of block i, for i in [lo, hi)
  int32_t lo = 0;              // first pinned block index
  int32_t hi = 0;              // one past the last pinned block index
  int32_t reserve = 0;         // slots admission reserved
};

struct WindowSlotStats {
  int32_t num_slots = 0;
  int32_t num_pinned = 0;  // in some running sequence's window
  int32_t num_cached = 0;  // mapped to a block, reusable, evictable
  int32_t num_reserved = 0;
  int64_t num_evictions = 0;
};

class WindowSlots final : public PrefixCheck {
 public:
  WindowSlots(int32_t num_slots, int32_t num_blocks, int32_t block_size, int32_t window);

  // Slots a sequence that reads a whole window pins while decoding.
  static int32_t full_reserve(int32_t window, int32_t block_size);
  // What admission reserves for a sequence of max_total_tokens.
  int32_t reserve_for(int32_t max_total_tokens) const;
  bool can_admit(int32_t max_total_tokens) const { return reserved_ + reserve_for(max_total_tokens) <= num_slots_; }

  // The longest leading part of a cached chain whose last window of blocks
  // has mapped slots (KvPool::admit's check).
  int32_t usable_prefix_blocks(std::span<const int32_t> prefix_blocks) const override;

  // After KvPool::admit gave `blocks` (its prefix passed the check): reserve
  // and pin the prefix's last window. w must be empty; its slots vector must
  // be as long as the sequence's block table may grow.
  void admit(const SeqBlocks& blocks, SeqWindow& w);
  // How many of `want` tokens from `start` a chunk may take: the window
  // behind start and the chunk's blocks must fit the slots not reserved by
  // others. At least 1.
  int32_t max_chunk(const SeqWindow& w, int32_t start, int32_t want) const;
  // Before a pass computes positions [start, start + num_tokens): unpins the
  // blocks wholly behind start's window and pins, with a slot each, the
  // blocks up to the chunk's last. The chunk must fit (max_chunk()).
  void prepare(const SeqBlocks& blocks, SeqWindow& w, int32_t start, int32_t num_tokens) {
    const int32_t lo = first_block(start), hi = (start + num_tokens - 1) / block_size_ + 1;
    if (lo != w.lo || hi != w.hi) [[unlikely]] repin(blocks, w, lo, hi);
  }
  // Unpins the sequence's window and gives back its reservation; the slots
  // of blocks it had not signed are free at once. Call before KvPool::release.
  void release(const SeqBlocks& blocks, SeqWindow& w);
  // Compaction moved block src's KV to dst (every dst free when moved).
  void move_block(int32_t src, int32_t dst);

  WindowSlotStats stats() const;
  // Tests: pins, mappings, reservations and the lists agree with the live
  // sequences given (block tables and windows, pairwise).
  Status check_invariants(std::span<const SeqBlocks* const> blocks, std::span<const SeqWindow* const> windows) const;

 private:
  int32_t first_block(int32_t start) const { return start >= window_ ? (start - window_ + 1) / block_size_ : 0; }
  void repin(const SeqBlocks& blocks, SeqWindow& w, int32_t lo, int32_t hi);
  void set_range(SeqWindow& w, int32_t lo, int32_t hi);
  void pin_block(int32_t block, SeqWindow& w, int32_t index);
  void unpin(int32_t slot);
  int32_t take_slot();
  void unmap(int32_t slot);
  void lru_push_back(int32_t slot);
  void lru_remove(int32_t slot);

  const int32_t num_slots_, block_size_, window_;
  std::vector<int32_t> slot_of_block_;  // [num_blocks] slot or -1
  std::vector<int32_t> block_of_slot_;  // [num_slots] block or -1 (free)
  std::vector<int32_t> pins_;           // [num_slots] windows that hold it
  std::vector<int32_t> lru_prev_, lru_next_;  // [num_slots] mapped, unpinned slots; head least recent
  int32_t lru_head_ = -1, lru_tail_ = -1;
  std::vector<int32_t> free_;           // unmapped slots
  int64_t reserved_ = 0;                // sum over sequences of max(pins, reserve)
  int32_t num_pinned_ = 0;
  int64_t num_evictions_ = 0;
};

}  // namespace zl
