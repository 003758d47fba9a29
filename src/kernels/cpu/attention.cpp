#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/matmul.h"

namespace zl::cpu {
namespace {

// One (token, head): out = softmax(q·Kᵀ·scale) · V over positions [0, pos].
void attend_one(const AttentionArgs& a, int64_t token, int32_t head, float* acc) {
  const int32_t group = a.num_heads / a.num_kv_heads;
  const int64_t kv_dim = int64_t{a.num_kv_heads} * a.head_dim;
  const int64_t kv_offset = int64_t{head / group} * a.head_dim;
  const float* q = a.q + (token * a.num_heads + head) * a.head_dim;
  const int32_t* blocks = a.block_tables[token];
  const int32_t pos = a.positions[token];

  float max_score = -INFINITY, sum = 0.0f;
  for (int32_t d = 0; d < a.head_dim; ++d) acc[d] = 0.0f;
  for (int32_t p = 0; p <= pos; ++p) {
    int64_t row = int64_t{blocks[p / a.block_size]} * a.block_size + p % a.block_size;
    const float* k = a.k_cache + row * kv_dim + kv_offset;
    const float* v = a.v_cache + row * kv_dim + kv_offset;
    float score = dot_f32(q, k, a.head_dim) * a.scale;
    if (score > max_score) {
      // Rescale what was accumulated under the old maximum.
      float correction = std::exp(max_score - score);
      sum *= correction;
      for (int32_t d = 0; d < a.head_dim; ++d) acc[d] *= correction;
      max_score = score;
    }
    float weight = std::exp(score - max_score);
    sum += weight;
    for (int32_t d = 0; d < a.head_dim; ++d) acc[d] += weight * v[d];
  }
  float* out = a.out + (token * a.num_heads + head) * a.head_dim;
  for (int32_t d = 0; d < a.head_dim; ++d) out[d] = acc[d] / sum;
}

}  // namespace

void attention_f32(ThreadPool& pool, const AttentionArgs& args) {
  int64_t num_items = args.num_tokens * args.num_heads;
  auto items = [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> acc;
    acc.resize(static_cast<size_t>(args.head_dim));
    for (int64_t item = begin; item < end; ++item)
      attend_one(args, item / args.num_heads, static_cast<int32_t>(item % args.num_heads), acc.data());
  };
  // Small work (short contexts, tiny heads) is cheaper inline than woken workers.
  int64_t max_pos = 0;
  for (int64_t t = 0; t < args.num_tokens; ++t) max_pos = std::max<int64_t>(max_pos, args.positions[t]);
  if (num_items * (max_pos + 1) * args.head_dim < (1 << 16)) return items(0, num_items);
  pool.parallel_for(num_items, items);
}

}  // namespace zl::cpu
