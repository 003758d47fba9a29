// AVX-512 tile kernels for the float formats (F, BW, VL; F16C for f16).
//
// Register tiles of R rows x T tokens (4 x 4 at most: 16 accumulators) run
// over the whole reduction dimension with one vector accumulator per output,
// reduced horizontally at the end; each weight vector loaded is used for T
// tokens and each activation vector for R rows.
//
// Float formats: 16 weights are widened to f32 in registers (bf16: a 16-bit
// shift; f16: vcvtph2ps) and multiplied with f32 activations by FMA; the tail
// of a row that is not a multiple of 16 uses masked loads.
//
// Quantized formats: matmul_avx512_quant.cpp.
// GCC 12's AVX-512 headers trip -Wuninitialized inside _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/matmul_kernels.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

namespace zl::cpu {
namespace {

template <DType D>
ZL_AVX512 inline __m512 load_f32x16(const uint8_t* row, int64_t k) {
  if constexpr (D == DType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k);
  } else if constexpr (D == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  } else {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType D>
ZL_AVX512 inline __m512 load_f32x16_masked(const uint8_t* row, int64_t k, __mmask16 m) {
  if constexpr (D == DType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + k);
  } else if constexpr (D == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * k));
  } else {
    __m256i h = _mm256_maskz_loadu_epi16(m, row + 2 * k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType D, int R, int T>
ZL_AVX512 void micro_float(const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0, float* y,
                           int64_t ldy) {
  const int64_t n = in.cols;
  const uint8_t* wr[R];
  const float* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  for (int t = 0; t < T; ++t) xr[t] = in.x + (t0 + t) * n;
  const int64_t next_tile = R * w.row_bytes();
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(xr[t] + k);
    for (int r = 0; r < R; ++r) {
      // The next row tile (see micro_quant).
      _mm_prefetch(reinterpret_cast<const char*>(wr[r] + next_tile) + k * (D == DType::kF32 ? 4 : 2), _MM_HINT_T0);
      __m512 wv = load_f32x16<D>(wr[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (k < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - k)) - 1);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, xr[t] + k);
    for (int r = 0; r < R; ++r) {
      __m512 wv = load_f32x16_masked<D>(wr[r], k, m);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
}

template <DType D, int T>
ZL_AVX512 void rows_for_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               int64_t t0, float* y, int64_t ldy) {
  int64_t r = row_begin;
  for (; r + 4 <= row_end; r += 4) micro_float<D, 4, T>(w, in, r, t0, y, ldy);
  for (; r < row_end; ++r) micro_float<D, 1, T>(w, in, r, t0, y, ldy);
}

template <DType D>
ZL_AVX512 void tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                    int64_t ldy) {
  int64_t t = 0;
  for (; t + 4 <= in.num_tokens; t += 4) rows_for_tokens<D, 4>(w, in, row_begin, row_end, t, y, ldy);
  switch (in.num_tokens - t) {
    case 3: return rows_for_tokens<D, 3>(w, in, row_begin, row_end, t, y, ldy);
    case 2: return rows_for_tokens<D, 2>(w, in, row_begin, row_end, t, y, ldy);
    case 1: return rows_for_tokens<D, 1>(w, in, row_begin, row_end, t, y, ldy);
    default: return;
  }
}

}  // namespace

TileKernel tile_kernel_avx512(DType dtype) {
  switch (dtype) {
    case DType::kF32: return tile<DType::kF32>;
    case DType::kF16: return tile<DType::kF16>;
    case DType::kBF16: return tile<DType::kBF16>;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kI8: return tile_kernel_avx512_quant(dtype);
  }
  return nullptr;
}

}  // namespace zl::cpu
