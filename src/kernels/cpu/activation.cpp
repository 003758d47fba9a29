#include "kernels/cpu/activation.h"

// GCC 12's AVX-512 headers trip -Wuninitialized inside _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cmath>

#define ZL_AVX512 __attribute__((target("avx512f,avx512dq,fma")))

namespace zl::cpu {
namespace {

// exp(x) for x in [-87, 88]: x = n·ln2 + r with |r| <= ln2/2, e^r by its
// Taylor polynomial to r^6 (relative error < 2e-8), times 2^n by vscalefps.
ZL_AVX512 inline __m512 exp_avx512(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-87.0f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

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

__attribute__((target_clones("avx512f", "fma", "default")))
void add_f32(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace zl::cpu
