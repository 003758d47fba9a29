#include "model/cuda_plan.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/cuda/sampling.h"

namespace zl {
namespace {

int32_t align4(int64_t words) { return static_cast<int32_t>((words + 3) / 4 * 4); }

}  // namespace

std::vector<int32_t> decode_graph_buckets(int32_t max_num_seqs) {
  std::vector<int32_t> buckets;
  for (int32_t b = 1; b <= kMaxDecodeGraphBatch; b *= 2) {
    buckets.push_back(b);
    if (b >= max_num_seqs) break;
  }
  return buckets;
}

int32_t decode_graph_bucket(int32_t num_seqs, int32_t max_num_seqs) {
  if (num_seqs < 1) return -1;
  for (int32_t b : decode_graph_buckets(max_num_seqs))
    if (b >= num_seqs) return b;
  return -1;
}

int32_t decode_num_splits(int32_t num_seqs, int32_t num_kv_heads, int32_t group, int32_t rows_per_block,
                          int32_t sm_count) {
  const int64_t blocks = int64_t{num_seqs} * num_kv_heads * ((group + rows_per_block - 1) / rows_per_block);
  const int64_t wanted = 2 * int64_t{sm_count};
  if (blocks <= 0 || blocks >= wanted) return 1;
  return static_cast<int32_t>(std::clamp<int64_t>((wanted + blocks - 1) / blocks, 1, 16));
}

int32_t sample_params_words() { return static_cast<int32_t>(sizeof(cuda::SampleParams) / sizeof(int32_t)); }

StepLayout step_layout(int32_t num_tokens, int32_t num_seqs, int32_t num_logit_rows) {
  StepLayout l;
  l.num_tokens = num_tokens;
  l.num_seqs = num_seqs;
  l.num_logit_rows = num_logit_rows;
  int32_t at = 0;
  auto section = [&](int32_t& offset, int64_t words) {
    offset = at;
    at += align4(words);
  };
  section(l.tokens, num_tokens);
  section(l.positions, num_tokens);
  section(l.slots, num_tokens);
  section(l.seq_token_begin, num_seqs);
  section(l.seq_num_tokens, num_seqs);
  section(l.seq_start_pos, num_seqs);
  section(l.table_begin, num_seqs);
  section(l.logit_rows, num_logit_rows);
  section(l.sample_params, int64_t{num_logit_rows} * sample_params_words());
  l.block_tables = at;
  return l;
}

int64_t pack_step(const ForwardBatch& batch, int32_t block_size, const StepLayout& l,
                  std::span<const uint8_t> sample_params, std::vector<int32_t>& out) {
  const int32_t num_tokens = static_cast<int32_t>(batch.tokens.size());
  const int32_t num_seqs = static_cast<int32_t>(batch.seqs.size());
  const int32_t num_rows = static_cast<int32_t>(batch.logit_rows.size());
  CHECK(num_tokens <= l.num_tokens && num_seqs <= l.num_seqs && num_rows <= l.num_logit_rows)
      << "pack_step: batch larger than its layout";
  int64_t table_words = 0;
  for (const SeqChunk& s : batch.seqs) table_words += static_cast<int64_t>(s.block_table.size());
  const int64_t used = l.block_tables + table_words;
  out.assign(static_cast<size_t>(used), 0);
  int32_t* w = out.data();

  std::copy(batch.tokens.begin(), batch.tokens.end(), w + l.tokens);
  std::fill(w + l.slots, w + l.slots + l.num_tokens, -1);
  int32_t table_at = 0;
  for (int32_t i = 0; i < num_seqs; ++i) {
    const SeqChunk& s = batch.seqs[static_cast<size_t>(i)];
    w[l.seq_token_begin + i] = s.token_begin;
    w[l.seq_num_tokens + i] = s.num_tokens;
    w[l.seq_start_pos + i] = s.start_pos;
    w[l.table_begin + i] = table_at;
    for (int32_t t = 0; t < s.num_tokens; ++t) {
      const int32_t pos = s.start_pos + t;
      w[l.positions + s.token_begin + t] = pos;
      w[l.slots + s.token_begin + t] = s.block_table[static_cast<size_t>(pos / block_size)] * block_size + pos % block_size;
    }
    std::copy(s.block_table.begin(), s.block_table.end(), w + l.block_tables + table_at);
    table_at += static_cast<int32_t>(s.block_table.size());
  }
  // Padding chunks start where the real tokens end, with no tokens.
  for (int32_t i = num_seqs; i < l.num_seqs; ++i) w[l.seq_token_begin + i] = num_tokens;
  std::copy(batch.logit_rows.begin(), batch.logit_rows.end(), w + l.logit_rows);

  cuda::SampleParams padding;  // slot -1: skipped by the sampler
  for (int32_t r = 0; r < l.num_logit_rows; ++r) {
    int32_t* dst = w + l.sample_params + int64_t{r} * sample_params_words();
    const bool given = r < num_rows && static_cast<int64_t>(sample_params.size()) >= int64_t{r + 1} * 4 * sample_params_words();
    std::memcpy(dst, given ? sample_params.data() + int64_t{r} * 4 * sample_params_words()
                           : reinterpret_cast<const uint8_t*>(&padding),
                sizeof(cuda::SampleParams));
  }
  return used;
}

bool is_plain_decode(const ForwardBatch& batch) {
  if (batch.logit_rows.size() != batch.seqs.size()) return false;
  for (size_t i = 0; i < batch.seqs.size(); ++i)
    if (batch.seqs[i].num_tokens != 1 || batch.logit_rows[i] != static_cast<int32_t>(i)) return false;
  return true;
}

}  // namespace zl
