// SignatureIndex: the KV pool's prefix index, cache signature -> block id.
// An open-addressing hash table (linear probing) allocated once, so signing a
// block, looking up a prefix and evicting never reach the allocator on the
// engine's step path. It holds at most max_entries signatures (the pool's
// block count: an indexed block carries exactly one signature) in
// bit_ceil(2 * max_entries) slots, so the load factor never exceeds 0.5 and
// every probe ends at an empty slot within a few steps. Signatures are
// XXH3-128 outputs, already uniform: a signature's home slot is the low bits
// of its `low` half. Engine thread only; no locks.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv_pool.h"

namespace zl {

class SignatureIndex {
 public:
  // Room for max_entries (> 0) signatures; inserting one more is a caller bug.
  explicit SignatureIndex(int32_t max_entries);
  SignatureIndex(const SignatureIndex&) = delete;
  SignatureIndex& operator=(const SignatureIndex&) = delete;

  int32_t size() const { return num_entries_; }
  int32_t num_slots() const { return static_cast<int32_t>(slots_.size()); }

  // The block `signature` maps to, or -1.
  int32_t find(const BlockSignature& signature) const;
  // Maps signature to block (>= 0) unless it is already present (then the
  // existing entry wins); returns whether it inserted.
  [[nodiscard]] bool insert(const BlockSignature& signature, int32_t block);
  // Points a present signature at another block (compaction moved it).
  void remap(const BlockSignature& signature, int32_t block);
  // Removes signature; returns whether it was present.
  bool erase(const BlockSignature& signature);
  // Starts loading the slot where a probe for signature begins.
  void prefetch(const BlockSignature& signature) const { __builtin_prefetch(&slots_[home(signature)], 1); }

 private:
  static constexpr int32_t kEmpty = -1;
  struct Slot {
    BlockSignature signature;
    int32_t block = kEmpty;  // kEmpty: the slot is free
  };

  size_t home(const BlockSignature& signature) const { return signature.low & mask_; }
  // The slot holding signature, or the empty slot where its probe ends.
  size_t probe(const BlockSignature& signature) const;

  std::vector<Slot> slots_;  // [bit_ceil(2 * max_entries)]
  size_t mask_ = 0;          // slots_.size() - 1
  int32_t max_entries_ = 0;
  int32_t num_entries_ = 0;
};

}  // namespace zl
