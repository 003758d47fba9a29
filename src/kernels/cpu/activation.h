// SwiGLU, the Llama MLP's gate: out = silu(gate) * up, silu(x) = x·σ(x).
#pragma once

#include <cstdint>

namespace zl::cpu {

// gate, up, out: [n] (out may alias gate).
void swiglu_f32(const float* gate, const float* up, float* out, int64_t n);

}  // namespace zl::cpu
