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
// Packed bf16 (matmul.h), which the loader makes: 16 rows per vector lane,
// one sequential stream (see packed_bf16_group). With AVX512-BF16 the
// activations are rounded to bf16 and vdpbf16ps multiplies 16 rows x 2
// columns per instruction (packed_bf16_group_dot), as llama.cpp computes bf16.
//
// Packed f16 (16 rows per vector, one column each): matmul_avx512_f16.cpp.
// Quantized formats: matmul_avx512_quant.cpp.
#include "kernels/cpu/immintrin_quiet.h"

#include "kernels/cpu/matmul_kernels.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))
#define ZL_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx512bf16,fma,f16c")))

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

constexpr int64_t kPrefetchPairs = 64;  // packed bf16: 64-byte vectors read ahead

// y[t0 + t][16g + i] = sum of acc[t][0..3] lane i, for the rows of group g in
// [row_lo, row_end).
template <int T>
ZL_AVX512 inline void store_group(const __m512 (&acc)[T][4], int64_t g, int64_t row_lo, int64_t row_end, int64_t t0,
                                  float* y, int64_t ldy) {
  const int64_t rg = g * 16;
  const __mmask16 m = group_store_mask(rg, row_lo, row_end);
  for (int t = 0; t < T; ++t) {
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]), _mm512_add_ps(acc[t][2], acc[t][3]));
    _mm512_mask_storeu_ps(y + (t0 + t) * ldy + rg, m, sum);
  }
}

// Packed bf16 (matmul.h): lane i of each vector belongs to row 16g + i, so
// a 64-byte load gives 16 rows x 2 columns: the shift widens column 2c, the
// mask column 2c + 1, each multiplied by that activation broadcast. Four
// partial sums per token (column pairs alternate, even/odd columns apart)
// keep four FMA chains in flight; no horizontal sums. Rows outside
// [row_lo, row_end) are computed but not stored.
template <int T>
ZL_AVX512 void packed_bf16_group(const WeightMatrix& w, const MatmulInput& in, int64_t g, int64_t row_lo,
                                 int64_t row_end, int64_t t0, float* y, int64_t ldy, ReadAhead* ahead) {
  const int64_t n = in.cols, pairs = (n + 1) / 2;
  const uint8_t* p = w.packed + g * pairs * 64;
  const float* xr[T];
  for (int t = 0; t < T; ++t) xr[t] = in.x + (t0 + t) * n;
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  __m512 acc[T][4];
  for (int t = 0; t < T; ++t)
    for (int a = 0; a < 4; ++a) acc[t][a] = _mm512_setzero_ps();
  auto pair = [&](int64_t c, int a, bool has_odd) ZL_AVX512 {
    const __m512i wv = _mm512_load_si512(p + c * 64);
    const __m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(wv, 16));
    const __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(wv, high));
    for (int t = 0; t < T; ++t) {
      acc[t][a] = _mm512_fmadd_ps(we, _mm512_set1_ps(xr[t][2 * c]), acc[t][a]);
      if (has_odd) acc[t][a + 1] = _mm512_fmadd_ps(wo, _mm512_set1_ps(xr[t][2 * c + 1]), acc[t][a + 1]);
    }
  };
  int64_t c = 0;
  for (; c + 2 <= n / 2; c += 2) {
    // Both lines of the step, 4 KiB ahead: the hardware prefetchers alone
    // left a thread ~25% below this on one stream (llama-110m decode).
    _mm_prefetch(reinterpret_cast<const char*>(p + (c + kPrefetchPairs) * 64), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(p + (c + kPrefetchPairs + 1) * 64), _MM_HINT_T0);
    if (ahead != nullptr) ahead->step(2 * 64);
    pair(c, 0, true);
    pair(c + 1, 2, true);
  }
  for (; c < pairs; ++c) pair(c, 0, 2 * c + 1 < n);
  store_group<T>(acc, g, row_lo, row_end, t0, y, ldy);
}

}  // namespace

ZL_AVX512_BF16 void to_bf16_pairs_avx512(const float* x, int64_t n, uint32_t* xp, int64_t piece_stride) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    _mm512_storeu_si512(xp + i / 32 * piece_stride,
                        (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i)));
  if (i == n) return;
  const int64_t left = n - i;  // 1..31
  const auto lo = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
  const auto hi = static_cast<__mmask16>(left > 16 ? (1u << (left - 16)) - 1 : 0);
  const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x + i + 16), _mm512_maskz_loadu_ps(lo, x + i));
  _mm512_mask_storeu_epi32(xp + i / 2, static_cast<__mmask16>((1u << ((left + 1) / 2)) - 1), (__m512i)v);
}

namespace {

// As packed_bf16_group with bf16 activations xp[T][pairs]: one vdpbf16ps per
// 64 bytes of weights and token (lane i += w[i][2c] x[2c] + w[i][2c + 1] x[2c + 1]),
// four chains per token over consecutive column pairs.
template <int T>
ZL_AVX512_BF16 void packed_bf16_group_dot(const WeightMatrix& w, const uint32_t* xp, int64_t pairs, int64_t g,
                                          int64_t row_lo, int64_t row_end, int64_t t0, float* y, int64_t ldy,
                                          ReadAhead* ahead) {
  const uint8_t* p = w.packed + g * pairs * 64;
  __m512 acc[T][4];
  for (int t = 0; t < T; ++t)
    for (int a = 0; a < 4; ++a) acc[t][a] = _mm512_setzero_ps();
  auto pair = [&](int64_t c, int a) ZL_AVX512_BF16 {
    const __m512bh wv = (__m512bh)_mm512_load_si512(p + c * 64);
    for (int t = 0; t < T; ++t)
      acc[t][a] = _mm512_dpbf16_ps(acc[t][a], wv, (__m512bh)_mm512_set1_epi32(static_cast<int>(xp[t * pairs + c])));
  };
  int64_t c = 0;
  for (; c + 4 <= pairs; c += 4) {
    for (int a = 0; a < 4; ++a)
      _mm_prefetch(reinterpret_cast<const char*>(p + (c + kPrefetchPairs + a) * 64), _MM_HINT_T0);
    if (ahead != nullptr) ahead->step(4 * 64);
    for (int a = 0; a < 4; ++a) pair(c + a, a);
  }
  for (; c < pairs; ++c) pair(c, 0);
  store_group<T>(acc, g, row_lo, row_end, t0, y, ldy);
}

// Group g of a packed bf16 matrix x tokens t0.. t0+T-1, by vdpbf16ps where
// the activations are bf16 pairs (converted once per call, matmul.cpp).
template <int T>
ZL_AVX512 void packed_bf16_tile(const WeightMatrix& w, const MatmulInput& in, int64_t g, int64_t row_lo,
                                int64_t row_end, int64_t t0, float* y, int64_t ldy, ReadAhead* ahead) {
  if (in.xbf16 == nullptr) return packed_bf16_group<T>(w, in, g, row_lo, row_end, t0, y, ldy, ahead);
  const int64_t pairs = (in.cols + 1) / 2;
  packed_bf16_group_dot<T>(w, in.xbf16 + t0 * pairs, pairs, g, row_lo, row_end, t0, y, ldy, ahead);
}

// Rows [row_begin, row_end) of a packed bf16 matrix (no AMX): decode
// batches group by group, each token tile on a group before the next while
// the next group is read ahead (ReadAhead; dummy:llama-1b on the Xeon VM
// without AMX, 8 / 16 tokens a step: 49 -> 63 / 57-58 -> 66 tokens/s; 4
// tokens: 38-40 -> 44); prefill token tile by token tile over the rows.
ZL_AVX512 void packed_bf16_rows(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                                float* y, int64_t ldy) {
  const int64_t g_begin = row_begin / kPackRows, g_end = (row_end + kPackRows - 1) / kPackRows;
  if (!group_first(in.num_tokens)) {
    return each_token_tile(in.num_tokens, [&]<int T>(int64_t t0) {
      for (int64_t g = g_begin; g < g_end; ++g) packed_bf16_tile<T>(w, in, g, row_begin, row_end, t0, y, ldy, nullptr);
    });
  }
  const int64_t group_bytes = (in.cols + 1) / 2 * 64;
  for (int64_t g = g_begin; g < g_end; ++g) {
    ReadAhead ahead = ReadAhead::over_tiles(w.packed + (g + 1) * group_bytes, in.num_tokens);
    each_token_tile(in.num_tokens, [&]<int T>(int64_t t0) {
      packed_bf16_tile<T>(w, in, g, row_begin, row_end, t0, y, ldy, &ahead);
    });
  }
}

template <DType D>
ZL_AVX512 void tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                    int64_t ldy) {
  if constexpr (D == DType::kF16) {
    if (w.packed != nullptr) return packed_f16_tile(w, in, row_begin, row_end, y, ldy);
  }
  if constexpr (D == DType::kBF16) {
    if (w.packed != nullptr) {
      if (in.xbf16 != nullptr && bf16_amx_tiles(in.cols))
        return packed_bf16_amx_tile(w, in, row_begin, row_end, y, ldy);
      return packed_bf16_rows(w, in, row_begin, row_end, y, ldy);
    }
  }
  each_token_tile(in.num_tokens,
                  [&]<int T>(int64_t t0) { rows_for_tokens<D, T>(w, in, row_begin, row_end, t0, y, ldy); });
}

}  // namespace

TileKernel tile_kernel_avx512(DType dtype) {
  switch (dtype) {
    case DType::kF32: return tile<DType::kF32>;
    case DType::kF16: return tile<DType::kF16>;
    case DType::kBF16: return tile<DType::kBF16>;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kI8:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ3_K:
    case DType::kQ2_K:
    case DType::kIQ4_XS: return tile_kernel_avx512_quant(dtype);
  }
  return nullptr;
}

}  // namespace zl::cpu
