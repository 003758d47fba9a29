// Fused residual add + RMSNorm on the device, the seam between two Llama
// sub-blocks: the residual stream x (f32) takes the sub-block's output, and
// the next sub-block's input is its RMSNorm, stored bf16 for the GEMM.
//   if delta:  x[r] += delta[r]                                 (in place)
//   y[r] = bf16(x[src] / sqrt(mean(x[src]²) + eps) * weight),   src = row_index ? row_index[r] : r
// The mean is taken in f32 over dim, as the CPU's rmsnorm_f32.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"

namespace zl::cuda {

// x: [*, dim] f32; delta: [num_rows, dim] f32 or null (then row_index may
// pick rows, e.g. the rows whose logits are wanted); weight: [dim] f32;
// y: [num_rows, dim] bf16.
void add_rmsnorm(float* x, const float* delta, const float* weight, Bf16* y, const int32_t* row_index,
                 int64_t num_rows, int64_t dim, float eps, Stream stream);

}  // namespace zl::cuda
