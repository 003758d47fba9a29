// Host-side planning for the CUDA forward pass, plain C++ so it is tested on
// any machine: which captured decode graph serves a batch, how many ways the
// decode attention splits its positions, and how one step's metadata (token
// ids, positions, KV slots, chunk table, block tables, logit rows, sampling
// parameters) is packed into one int32 buffer that reaches the device in a
// single copy.
//
// Packed layout, every section starting on a 16-byte boundary, sizes fixed by
// (num_tokens, num_seqs, num_logit_rows) so a graph captured for a bucket
// always finds its sections at the same offsets; the block tables come last
// and only their used length is copied:
//   tokens [T] | positions [T] | slots [T] | seq_token_begin [S] |
//   seq_num_tokens [S] | seq_start_pos [S] | table_begin [S] |
//   logit_rows [R] | sample_params [R × kSampleParamsWords] | block_tables [...]
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/llama.h"
#include "zerolayer/status.h"

namespace zl {

constexpr int32_t kMaxDecodeGraphBatch = 256;

// The captured batch sizes: 1, 2, 4, ..., up to the first power of two
// >= max_num_seqs (at most kMaxDecodeGraphBatch).
std::vector<int32_t> decode_graph_buckets(int32_t max_num_seqs);
// The smallest bucket holding num_seqs decodes; -1 when none does (run eagerly).
int32_t decode_graph_bucket(int32_t num_seqs, int32_t max_num_seqs);

// Splits of the decode attention's positions so the grid has about two
// blocks per multiprocessor: blocks without splitting are
// num_seqs × num_kv_heads × ceil(group / rows_per_block). In [1, 16].
int32_t decode_num_splits(int32_t num_seqs, int32_t num_kv_heads, int32_t group, int32_t rows_per_block,
                          int32_t sm_count);

struct StepLayout {
  // Offsets in int32 words.
  int32_t tokens = 0, positions = 0, slots = 0;
  int32_t seq_token_begin = 0, seq_num_tokens = 0, seq_start_pos = 0, table_begin = 0;
  int32_t logit_rows = 0, sample_params = 0, block_tables = 0;
  int32_t num_tokens = 0, num_seqs = 0, num_logit_rows = 0;
};
// Words of one SampleParams (kernels/cuda/sampling.h), packed as its bytes.
int32_t sample_params_words();
StepLayout step_layout(int32_t num_tokens, int32_t num_seqs, int32_t num_logit_rows);

// Packs a validated batch into `out` (resized; words past the used block
// tables are not part of the step). Padding up to the layout's sizes: tokens
// id 0 with slot -1 (no KV write), chunks with 0 tokens, logit rows 0 with
// sampling slot -1. sample_params: [batch.logit_rows.size()] raw bytes of
// SampleParams, or empty (all rows padding). Returns the words to copy.
int64_t pack_step(const ForwardBatch& batch, int32_t block_size, const StepLayout& layout,
                  std::span<const uint8_t> sample_params, std::vector<int32_t>& out);

// True when every chunk is one token and logit_rows is 0, 1, ..., n-1: a
// decode step a captured graph can run.
bool is_plain_decode(const ForwardBatch& batch);

}  // namespace zl
