// Elementwise ops of the Llama block: the SwiGLU gate, out = silu(gate) * up
// with silu(x) = x·σ(x), and the residual add. AVX-512 when the CPU has it
// (exp by range reduction and a degree-6 polynomial, ~2 ulp), else scalar.
#pragma once

#include <cstdint>

namespace zl::cpu {

// gate, up, out: [n] (out may alias gate).
void swiglu_f32(const float* gate, const float* up, float* out, int64_t n);
// The scalar reference.
void swiglu_f32_scalar(const float* gate, const float* up, float* out, int64_t n);

// out = a + b; [n] each (out may alias a or b).
void add_f32(const float* a, const float* b, float* out, int64_t n);

}  // namespace zl::cpu
