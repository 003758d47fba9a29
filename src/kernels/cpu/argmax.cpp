#include "kernels/cpu/argmax.h"

#include "kernels/cpu/immintrin_quiet.h"

#include <cmath>

namespace zl::cpu {
namespace {

// A vector max pass, then a vector search for its first occurrence.
__attribute__((target("avx512f"))) int32_t argmax_avx512(const float* x, int64_t n) {
  __m512 best = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) best = _mm512_max_ps(best, _mm512_loadu_ps(x + i));
  float max_value = _mm512_reduce_max_ps(best);
  for (; i < n; ++i) max_value = x[i] > max_value ? x[i] : max_value;
  const __m512 target = _mm512_set1_ps(max_value);
  for (i = 0; i + 16 <= n; i += 16) {
    __mmask16 hits = _mm512_cmpeq_ps_mask(_mm512_loadu_ps(x + i), target);
    if (hits != 0) return static_cast<int32_t>(i + __builtin_ctz(hits));
  }
  for (; i < n; ++i)
    if (x[i] == max_value) return static_cast<int32_t>(i);
  return 0;  // every value NaN
}

int32_t argmax_scalar(const float* x, int64_t n) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i)
    if (best < 0 ? !std::isnan(x[i]) : x[i] > x[best]) best = i;
  return best < 0 ? 0 : static_cast<int32_t>(best);
}

}  // namespace

int32_t argmax_f32(const float* x, int64_t n) {
  static const bool has_avx512 = __builtin_cpu_supports("avx512f");
  return has_avx512 ? argmax_avx512(x, n) : argmax_scalar(x, n);
}

void argmax_rows_f32(ThreadPool& pool, const float* x, int64_t num_rows, int64_t n, int32_t* out) {
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) out[r] = argmax_f32(x + r * n, n);
  };
  // One row is cheaper than waking the pool.
  if (num_rows <= 1) return rows(0, num_rows);
  pool.parallel_for(num_rows, rows);
}

}  // namespace zl::cpu
