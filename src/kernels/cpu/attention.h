// Causal grouped-query attention of a flat batch of tokens over the paged KV
// pool. Each token attends to positions [0, pos] of its own sequence (with a
// sliding window w, only to (pos - w, pos]), whose
// keys and values (already rotated and written for this step) are found
// through that sequence's block table: position p lives in block
// block_table[p / block_size], row p % block_size. Softmax is computed online
// (one pass, running max and sum), so no score buffer grows with the context.
// The AVX-512 path scores 16 positions at a time and updates the max once per
// 16; the scalar reference does it per position (same result within ~1e-6).
// Keys and values are read in the cache's own format (kernels/cpu/kv_format.h),
// dequantized to the same f32 values on both paths.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu/kv_format.h"
#include "kernels/cpu/matmul.h"

namespace zl::cpu {

struct AttentionArgs {
  const float* q = nullptr;        // [num_tokens, num_heads, head_dim]
  float* out = nullptr;            // [num_tokens, num_heads, head_dim]
  // One layer's arena: kv_layout(kv_dtype, num_kv_heads, head_dim,
  // block_size, kv_num_blocks).
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;   // same layout as k_cache
  KvCacheDtype kv_dtype = KvCacheDtype::kF32;
  int64_t kv_num_blocks = 0;       // blocks in the arena (every block id is below it)
  const int32_t* positions = nullptr;            // [num_tokens]
  const int32_t* const* block_tables = nullptr;  // [num_tokens]: the token's sequence's table
  int64_t num_tokens = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t block_size = 0;
  float scale = 1.0f;              // usually 1/sqrt(head_dim)
  int32_t window = 0;              // > 0: a sliding window of that many positions, the token's own included
  float softcap = 0.0f;            // > 0: scores become softcap * tanh(score / softcap) (Gemma 2)
};

void attention_f32(ThreadPool& pool, const AttentionArgs& args, Isa isa = active_isa());

}  // namespace zl::cpu
