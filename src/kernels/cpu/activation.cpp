#include "kernels/cpu/activation.h"

#include <cmath>

#include "kernels/cpu/clones.h"
#include "kernels/cpu/simd_exp.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512dq,fma")))

namespace zl::cpu {
namespace {

ZL_AVX512 void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  int64_t i = 0;
  for (; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    __m512 u = _mm512_maskz_loadu_ps(m, up + i);
    __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_mask_storeu_ps(out + i, m, _mm512_div_ps(_mm512_mul_ps(g, u), _mm512_add_ps(one, e)));
  }
}

}  // namespace

void swiglu_f32_scalar(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu_f32(const float* gate, const float* up, float* out, int64_t n) {
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  if (avx512) return swiglu_avx512(gate, up, out, n);
  swiglu_f32_scalar(gate, up, out, n);
}

void gelu_tanh_glu_f32(const float* gate, const float* up, float* out, int64_t n) {
  // PyTorch's constants: kBeta = sqrt(2) * (2 / sqrt(pi)) * 0.5, kKappa = 0.044715.
  const float beta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
  constexpr float kKappa = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    float x = gate[i];
    float inner = beta * (x + kKappa * x * x * x);
    out[i] = 0.5f * x * (1.0f + std::tanh(inner)) * up[i];
  }
}

void softcap_f32(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

ZL_CPU_CLONES
void add_f32(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace zl::cpu
