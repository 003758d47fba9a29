// Causal grouped-query attention on the device over the paged KV pool (bf16),
// for a flat batch of sequence chunks, each continuing from its own start
// position through its own block table (as kernels/cpu/attention.h).
//
// Prefill: a tiled kernel. A block takes kRowsPerBlock query rows (row =
// (token of one chunk, q head of one kv head), one per warp), streams the
// chunk's keys and values in tiles of 32 positions through shared memory
// (f32, rows padded by one word against bank conflicts), and keeps an online
// softmax per row. Grid = (query tiles, chunks, kv heads); blocks past a
// chunk's rows exit at once, so padded chunks (num_tokens 0) cost nothing.
//
// Decode (one token per chunk) is split-K (flash-decoding): the positions are
// cut into num_splits ranges handled by separate blocks, whose partial (max,
// sum, acc) a second kernel merges. Its kernel takes one (chunk, kv head,
// split) per block and all the kv head's query heads at once, so each key
// and value is read from memory once per group: keys by 16-byte loads, one
// position per lane, values as bf16 pairs, one pair of dims per lane; the
// block's four warps take turns over 32-position pieces and merge in shared
// memory. Groups other than 1, 2, 4, 8 and head_dim % 8 != 0 fall back to
// the tiled kernel. The decode grid is fixed per batch bucket, as a captured
// graph needs. Both paths sum each row's keys in a different order, so a
// token's output depends (in its last bits) on whether it ran as prefill or
// decode; the engine's batch-invariant mode decodes with the tiled kernel.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"

namespace zl::cuda {

constexpr int32_t kAttentionRowsPerBlock = 4;
constexpr int32_t kAttentionMaxHeadDim = 256;

struct AttentionArgs {
  const float* q = nullptr;       // [num_tokens, q_stride]; head h at [h * head_dim], already rotated
  int64_t q_stride = 0;
  Bf16* out = nullptr;            // [num_tokens, num_heads * head_dim]
  const Bf16* k_cache = nullptr;  // one layer: [num_blocks * block_size, num_kv_heads * head_dim]
  const Bf16* v_cache = nullptr;  // same
  const int32_t* seq_token_begin = nullptr;  // [num_seqs] first batch row of each chunk
  const int32_t* seq_num_tokens = nullptr;   // [num_seqs]; 0: padding, skipped
  const int32_t* seq_start_pos = nullptr;    // [num_seqs] tokens already in the KV pool before the chunk
  const int32_t* table_begin = nullptr;      // [num_seqs] where each chunk's block table starts in block_tables
  const int32_t* block_tables = nullptr;     // the chunks' tables, concatenated
  int32_t num_seqs = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;           // even, <= kAttentionMaxHeadDim
  int32_t block_size = 0;
  float scale = 1.0f;             // usually 1/sqrt(head_dim)
  float* split_workspace = nullptr;  // decode: [num_seqs, num_heads, num_splits, head_dim + 2]
};

// Any chunk lengths up to max_tokens_per_seq; one split.
Status attention_prefill(const AttentionArgs& args, int32_t max_tokens_per_seq, Stream stream);
// Every chunk has one token (or none); positions split num_splits ways.
Status attention_decode(const AttentionArgs& args, int32_t num_splits, Stream stream);

// Floats of split_workspace that attention_decode needs.
inline int64_t attention_split_workspace_floats(int32_t num_seqs, int32_t num_heads, int32_t num_splits,
                                                int32_t head_dim) {
  return int64_t{num_seqs} * num_heads * num_splits * (head_dim + 2);
}

}  // namespace zl::cuda
