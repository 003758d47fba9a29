#include "kernels/cpu/matmul.h"

namespace zl::cpu {

// 32 independent partial sums: GCC turns the inner loop into vector FMAs
// without -ffast-math (no reassociation across lanes is needed), and two
// vector accumulators at AVX-512 width hide the FMA latency.
__attribute__((target_clones("arch=skylake-avx512", "arch=haswell", "default")))
float dot_f32(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 32;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  return acc[0] + tail;
}

void matmul_f32(ThreadPool& pool, const float* x, const float* w, const float* bias, float* y,
                int64_t num_tokens, int64_t in, int64_t out) {
  auto rows = [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      const float* w_row = w + row * in;
      float b = bias != nullptr ? bias[row] : 0.0f;
      for (int64_t t = 0; t < num_tokens; ++t) y[t * out + row] = dot_f32(w_row, x + t * in, in) + b;
    }
  };
  // Below ~64K multiply-adds waking the workers costs more than it saves.
  if (num_tokens * in * out < (1 << 16)) return rows(0, out);
  // Chunks of 16 rows keep threads' slices of W contiguous.
  pool.parallel_for(out, rows, 16);
}

}  // namespace zl::cpu
