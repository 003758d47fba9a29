#include "engine/signature_stats.h"

#include <cstring>

namespace zl {
namespace {

bool names(const zl_stats_signature& entry, const BlockSignature& s) {
  uint8_t bytes[16];
  put_signature(bytes, s);
  return std::memcmp(entry.signature, bytes, 16) == 0;
}

}  // namespace

void SignatureStats::record_admission(const BlockSignature& root, const BlockSignature& last, int32_t num_blocks,
                                      int32_t num_tokens) {
  num_queries_++;
  if (num_blocks <= 0) return;
  num_hits_++;
  zl_stats_signature* entry = nullptr;
  for (size_t i = 0; i < num_entries_ && entry == nullptr; ++i)
    if (names(entries_[i], last)) entry = &entries_[i];
  if (entry == nullptr) {
    uint64_t inherited = 0;
    if (num_entries_ < entries_.size()) {
      entry = &entries_[num_entries_++];
    } else {  // full: the least hit entry makes room, its count becoming the newcomer's error bound
      entry = &entries_[0];
      for (zl_stats_signature& e : entries_)
        if (e.hits < entry->hits) entry = &e;
      inherited = entry->hits;
    }
    *entry = zl_stats_signature{};
    put_signature(entry->root, root);
    put_signature(entry->signature, last);
    entry->num_blocks = num_blocks;
    entry->num_tokens = num_tokens;
    entry->hits = inherited;
    entry->error = inherited;
  }
  entry->hits++;
  entry->tokens_saved += static_cast<uint64_t>(num_tokens);
  entry->last_hit = static_cast<uint64_t>(num_queries_);
}

}  // namespace zl
