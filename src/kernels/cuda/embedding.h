// Token embedding gather on the device: the residual stream starts as the
// f32 widening of each token's bf16 table row.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"

namespace zl::cuda {

// tokens: [num_tokens] (ids already validated); table: [vocab, dim] bf16;
// x: [num_tokens, dim] f32.
void embedding(const int32_t* tokens, const Bf16* table, float* x, int64_t num_tokens, int64_t dim, Stream stream);

}  // namespace zl::cuda
