// SignatureIndex (signature_index.h): linear probing with backward-shift
// deletion.
//
// Why backward shift rather than tombstones: the table lives for the whole
// run and sees an insert and an erase for every block that is signed and
// later evicted. Tombstones would pile up under that churn and lengthen every
// probe until a rebuild, and a rebuild is an O(slots) pause on the step path.
// Backward shift keeps the table exactly as if the erased signature had never
// been inserted (every probe run stays contiguous from its home slot), so
// probe lengths depend on the load alone, at the cost of moving the few
// entries of the erased one's cluster.
#include "engine/signature_index.h"

#include <bit>

#include "core/check.h"

namespace zl {

SignatureIndex::SignatureIndex(int32_t max_entries) : max_entries_(max_entries) {
  CHECK(max_entries > 0) << "signature index for " << max_entries << " entries";
  slots_.resize(std::bit_ceil(2 * static_cast<size_t>(max_entries)));
  mask_ = slots_.size() - 1;
}

size_t SignatureIndex::probe(const BlockSignature& signature) const {
  // Terminates: at least half the slots are empty.
  size_t i = home(signature);
  while (slots_[i].block != kEmpty && slots_[i].signature != signature) i = (i + 1) & mask_;
  return i;
}

int32_t SignatureIndex::find(const BlockSignature& signature) const {
  return slots_[probe(signature)].block;
}

bool SignatureIndex::insert(const BlockSignature& signature, int32_t block) {
  CHECK(block >= 0) << "block id " << block;
  size_t i = probe(signature);
  if (slots_[i].block != kEmpty) return false;
  CHECK(num_entries_ < max_entries_) << "signature index full at " << max_entries_ << " entries";
  slots_[i] = Slot{signature, block};
  ++num_entries_;
  return true;
}

void SignatureIndex::remap(const BlockSignature& signature, int32_t block) {
  CHECK(block >= 0) << "block id " << block;
  Slot& slot = slots_[probe(signature)];
  CHECK(slot.block != kEmpty) << "remap of a signature not in the index";
  slot.block = block;
}

bool SignatureIndex::erase(const BlockSignature& signature) {
  size_t hole = probe(signature);
  if (slots_[hole].block == kEmpty) return false;
  // Walk the rest of the cluster; an entry may fill the hole when its home
  // slot does not lie cyclically in (hole, i], i.e. when its probe from home
  // passes the hole (distances are taken modulo the table size).
  for (size_t i = (hole + 1) & mask_; slots_[i].block != kEmpty; i = (i + 1) & mask_) {
    size_t from_home = (i - home(slots_[i].signature)) & mask_;
    if (from_home >= ((i - hole) & mask_)) {
      slots_[hole] = slots_[i];
      hole = i;
    }
  }
  slots_[hole] = Slot{};
  --num_entries_;
  return true;
}

}  // namespace zl
