// Elementwise ops of the decoder block: the gated MLPs' activations, the SwiGLU gate, out = silu(gate) * up
// with silu(x) = x·σ(x), and the residual add. AVX-512 when the CPU has it
// (exp by range reduction and a degree-6 polynomial, ~2 ulp), else scalar.
#pragma once

#include <cstdint>

namespace zl::cpu {

// out = gelu_tanh(gate) * up, gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi) (x +
// 0.044715 x^3))) as PyTorch's gelu(approximate="tanh") (Gemma's MLP).
// gate, up, out: [n] (out may alias gate).
void gelu_tanh_glu_f32(const float* gate, const float* up, float* out, int64_t n);

// x -> cap * tanh(x / cap), in place over [n] (Gemma 2's logit soft-capping).
void softcap_f32(float* x, int64_t n, float cap);

// gate, up, out: [n] (out may alias gate).
void swiglu_f32(const float* gate, const float* up, float* out, int64_t n);
// The scalar reference.
void swiglu_f32_scalar(const float* gate, const float* up, float* out, int64_t n);

// out = a + b; [n] each (out may alias a or b).
void add_f32(const float* a, const float* b, float* out, int64_t n);

}  // namespace zl::cpu
