// The signature histogram: which cached prefix chains admissions reuse, how
// often, and how many prompt tokens that saved. A chain is named by the
// signatures of its first and last blocks (kv_pool.h); an admission that
// reuses n blocks hits the chain of exactly those n blocks.
//
// Bounded: the top ZL_STATS_MAX_SIGNATURES chains by Space-Saving (Metwally,
// Agrawal, El Abbadi 2005): a chain missing from a full table replaces the
// least hit entry and inherits its count as `error`, so any chain hit more
// than (all hits / capacity) times is in the table. Owned by the KV pool
// (engine thread); a hit is a scan of the table, never an allocation.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "engine/kv_pool.h"
#include "zerolayer/stats_protocol.h"

namespace zl {

class SignatureStats {
 public:
  // One admission that looked up the prefix cache and reused num_blocks
  // blocks (0: none) ending with `last`, the chain starting with `root`.
  void record_admission(const BlockSignature& root, const BlockSignature& last, int32_t num_blocks,
                        int32_t num_tokens);

  std::span<const zl_stats_signature> entries() const { return {entries_.data(), num_entries_}; }
  int64_t num_queries() const { return num_queries_; }
  int64_t num_hits() const { return num_hits_; }

 private:
  std::array<zl_stats_signature, ZL_STATS_MAX_SIGNATURES> entries_{};
  size_t num_entries_ = 0;
  int64_t num_queries_ = 0;
  int64_t num_hits_ = 0;
};

}  // namespace zl
