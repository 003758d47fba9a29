// Dense f32 matrix products for linear layers: y = x · Wᵀ (+ b), with W stored
// as PyTorch stores a Linear weight, [out_features, in_features]. The work is
// split over output rows so each thread streams its own slice of W once and
// reuses each row for every token of the batch.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace zl::cpu {

// Dot product of two f32 vectors (AVX-512 / AVX2+FMA / scalar, chosen at run time).
float dot_f32(const float* a, const float* b, int64_t n);

// x: [num_tokens, in], w: [out, in], bias: [out] or nullptr, y: [num_tokens, out].
void matmul_f32(ThreadPool& pool, const float* x, const float* w, const float* bias, float* y,
                int64_t num_tokens, int64_t in, int64_t out);

}  // namespace zl::cpu
