// The KV cache as a user of the engine sees it: the allocation policy it is
// run with, and the pool's counters (EngineStats::kv). How the pool works is
// the engine's (engine/kv_pool.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "zerolayer/status.h"

namespace zl {

// Contiguous reserves a sequence's whole extent at admission (it never needs
// memory again); paged takes blocks on demand and may preempt; hybrid is
// contiguous when a long enough run is free, else paged (engine/kv_pool.h).
enum class CachePolicy { kContiguous, kPaged, kHybrid };
const char* cache_policy_name(CachePolicy policy);
StatusOr<CachePolicy> parse_cache_policy(std::string_view name);

struct KvPoolStats {
  int32_t num_blocks = 0;
  int32_t num_free_blocks = 0;     // refcount 0, unsigned
  int32_t num_cached_blocks = 0;   // refcount 0, signed: reusable, evictable
  int32_t num_used_blocks = 0;     // refcount > 0
  int32_t num_live_signatures = 0; // signatures in the prefix index
  // Slots in held blocks that their sequence can never use (beyond its
  // max_total_tokens: block rounding), over all slots in the pool.
  double internal_fragmentation = 0.0;
  // Slots held for tokens a sequence has not computed yet (contiguous
  // reserves them at admission), over all slots in the pool.
  double reserved_ahead = 0.0;
  // Free-or-evictable blocks that the last admission attempt left idle
  // because no run of them was long enough (memory there, but scattered),
  // over all blocks in the pool; 0 after an admission or a wait for memory.
  double external_fragmentation = 0.0;
  // How scattered the free-or-evictable blocks are, whether or not anyone
  // needs a long run: 1 - (largest run / all of them).
  double free_space_scatter = 0.0;
  // Whole prompt lengths of admitted sequences (kWait tries do not count), so
  // hit / query is the share of prompt tokens not computed; it stays below 1
  // since each prompt's last block is always computed.
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;   // of which served from the cache
  int64_t num_evictions = 0;       // cached blocks taken for other contents
  int64_t num_compactions = 0;     // compact() calls that moved something
  int64_t num_block_moves = 0;
  int32_t max_block_moves = 0;     // the most blocks one compact() call moved
};

}  // namespace zl
