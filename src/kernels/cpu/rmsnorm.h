// RMSNorm as Llama defines it: y = x / sqrt(mean(x²) + eps) * weight, the mean
// taken in f32 over the last dimension.
#pragma once

#include <cstdint>

namespace zl::cpu {

// x, y: [num_rows, dim] (may alias); weight: [dim].
void rmsnorm_f32(const float* x, const float* weight, float* y, int64_t num_rows, int64_t dim,
                 float eps);

}  // namespace zl::cpu
