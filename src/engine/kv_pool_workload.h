// A synthetic serving workload driven straight against a KvPool, without a
// model: requests with random prompt and output lengths arrive all at once,
// are admitted FIFO up to a running limit, prefill in chunks, decode one
// token per step and finish at random points, so they leave in random order.
// Paged sequences that cannot grow preempt the newest running sequence
// (released, recomputed later). Used by the fragmentation test and by
// bench/kv_pool_fragmentation.cpp to compare the cache policies.
#pragma once

#include <cstdint>
#include <string>

#include "engine/kv_pool.h"

namespace zl {

struct KvWorkloadConfig {
  CachePolicy policy = CachePolicy::kContiguous;
  int32_t num_requests = 10000;
  int32_t num_blocks = 2048;         // 32k tokens: memory, not max_running, binds
  int32_t block_size = 16;
  // Prompt length and max_new_tokens are each uniform in [min_len, max_len];
  // the tokens actually generated are uniform in [1, max_new_tokens].
  int32_t min_len = 16;
  int32_t max_len = 1024;
  int32_t max_running = 64;
  int32_t prefill_chunk = 512;       // prompt tokens a sequence computes per step
  int32_t num_shared_prefixes = 4;   // "system prompts" shared by some requests
  int32_t shared_prefix_len = 256;
  double shared_prefix_share = 0.5;  // of requests that start with one
  uint64_t seed = 1;
  bool compaction = true;            // compact when a contiguous extent waits on scattered space
};

// Fractions of the pool's slots (0..1), averaged over steps, and their maxima.
struct KvWorkloadResult {
  CachePolicy policy = CachePolicy::kContiguous;
  int32_t num_requests = 0;
  int64_t num_steps = 0;
  int64_t num_preemptions = 0;
  double internal_fragmentation_mean = 0.0;
  double internal_fragmentation_max = 0.0;
  double external_fragmentation_mean = 0.0;
  double external_fragmentation_max = 0.0;
  double free_space_scatter_mean = 0.0;
  double reserved_ahead_mean = 0.0;
  double reserved_ahead_max = 0.0;
  double used_blocks_mean = 0.0;  // share of blocks held by running sequences
  double mean_running = 0.0;      // running sequences per step
  double prefix_hit_rate = 0.0;   // prefix_hit_tokens / prefix_query_tokens
  int64_t num_compactions = 0;
  int64_t num_block_moves = 0;
};

KvWorkloadResult run_kv_workload(const KvWorkloadConfig& config);

// One JSON object on one line; fractions as percentages.
std::string kv_workload_json(const KvWorkloadResult& result);

}  // namespace zl
