// The activation quantizer (quantize.h) in AVX-512 and AVX2 instructions:
// the same operations per element as the scalar one, so the same bytes.
// Per block of 32 values: amax = max |x| (exact in any order; a NaN never
// wins, as std::max(amax, NaN) keeps amax: it counts as 0 here), the scale
// and its inverse by int8_scale as there, then x * inv (one IEEE
// multiply), rounded to nearest even by cvtps2dq (MXCSR's default mode, as
// nearbyint), and the int32's low byte kept (static_cast<int8_t>; values of
// finite inputs lie in [-127, 127]); F16C rounds the scale through f16 as
// the scalar code's _Float16 does. Every matmul input of every layer is
// quantized: the scalar loop (libm's nearbyint per value, a library call
// per f16 conversion) took ~2.8 us per token of 2048 values, ~20% of a
// 512 x 2048 q8_0 matmul (matmul_bench, one thread, 64 tokens: 0.54 ->
// 0.42 ms with this).
#include "kernels/cpu/immintrin_quiet.h"

#include <cstring>

#include "kernels/cpu/quantize.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,f16c")))
#define ZL_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace zl::cpu {
namespace {

ZL_AVX512 inline __m512 abs_or_zero(__m512 x) {
  const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, a, _CMP_ORD_Q), a);
}

ZL_AVX2 inline __m256 abs_or_zero(__m256 x) {
  const __m256 a = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  return _mm256_and_ps(a, _mm256_cmp_ps(a, a, _CMP_ORD_Q));
}

// Low bytes of 8 int32 lanes (two per 128-bit half) into 8 bytes.
ZL_AVX2 inline int64_t low_bytes(__m256i v) {
  const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                        0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i b = _mm256_shuffle_epi8(v, pick);
  const __m256i packed = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  return _mm_cvtsi128_si64(_mm256_castsi256_si128(packed));
}

}  // namespace

ZL_AVX512 void quantize_activations_avx512(const float* x, int64_t num_rows, int64_t n, int8_t* q, float* d,
                                           float* ds) {
  const int64_t num_blocks = num_rows * (n / 32);  // rows are whole blocks: one run of them
  for (int64_t b = 0; b < num_blocks; ++b) {
    const __m512 x0 = _mm512_loadu_ps(x + 32 * b), x1 = _mm512_loadu_ps(x + 32 * b + 16);
    const Int8Scale s = int8_scale(_mm512_reduce_max_ps(_mm512_max_ps(abs_or_zero(x0), abs_or_zero(x1))));
    const __m512 inv = _mm512_set1_ps(s.inverse);
    const __m512i v0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, inv)), v1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, inv));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * b), _mm512_cvtepi32_epi8(v0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * b + 16), _mm512_cvtepi32_epi8(v1));
    activation_block_scales(s.scale, _mm512_reduce_add_epi32(_mm512_add_epi32(v0, v1)), d + b, ds + b);
  }
}

ZL_AVX2 void quantize_activations_avx2(const float* x, int64_t num_rows, int64_t n, int8_t* q, float* d, float* ds) {
  const int64_t num_blocks = num_rows * (n / 32);
  for (int64_t b = 0; b < num_blocks; ++b) {
    __m256 xs[4], amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      xs[i] = _mm256_loadu_ps(x + 32 * b + 8 * i);
      amax = _mm256_max_ps(amax, abs_or_zero(xs[i]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const Int8Scale scale = int8_scale(_mm_cvtss_f32(m));
    const __m256 inv = _mm256_set1_ps(scale.inverse);
    __m256i sum = _mm256_setzero_si256();
    for (int i = 0; i < 4; ++i) {
      const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(xs[i], inv));
      const int64_t bytes = low_bytes(v);
      std::memcpy(q + 32 * b + 8 * i, &bytes, 8);
      sum = _mm256_add_epi32(sum, v);
    }
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    activation_block_scales(scale.scale, _mm_cvtsi128_si32(s), d + b, ds + b);
  }
}

}  // namespace zl::cpu
