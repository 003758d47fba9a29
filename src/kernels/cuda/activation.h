// SwiGLU on the device: the gate and up projections come from one fused
// GEMM (w_gate and w_up stacked), and the product feeds w_down as bf16.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"

namespace zl::cuda {

// gate_up: [num_tokens, 2 * hidden] f32 (gate | up per row);
// out: [num_tokens, hidden] bf16 = silu(gate) * up, silu(g) = g / (1 + e^-g).
void swiglu(const float* gate_up, Bf16* out, int64_t num_tokens, int64_t hidden, Stream stream);

}  // namespace zl::cuda
