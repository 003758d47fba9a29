// AVX2 + FMA + F16C tile kernels, for CPUs without AVX-512. The same register
// tiles as matmul_avx512.cpp at 256 bits (one quantized block per register).
// Quantized dots use vpmaddubsw (unsigned x signed bytes into saturating
// int16 pairs) then vpmaddwd: Q4_0 feeds the stored nibble (code + 8, at most
// 15 * 127 * 2 per pair, no saturation) and takes 8 * sum(x) back per block;
// Q8_0 and I8 use |w| and x with w's sign (at most 128 * 127 * 2 per pair).
// Q5_0 / Q5_1 feed their 5-bit codes 0..31 the same way as Q4_0 (at most
// 31 * 127 * 2 per pair): Q5_0 takes 16 * sum(x) back, Q5_1 adds m * sum(x).
// IQ4_NL looks its codes up in the grid (vpshufb) and multiplies as Q8_0
// (|w| at most 127). The super-block formats (k-quants, IQ4_XS) are read as
// stored (see micro_kquant).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/block_codes_avx2.h"
#include "kernels/cpu/matmul_kernels.h"

namespace zl::cpu {
namespace {

template <DType D>
ZL_AVX2 inline __m256 load_f32x8(const uint8_t* row, int64_t k) {
  if constexpr (D == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  } else if constexpr (D == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  } else {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

ZL_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <DType D, int R, int T>
ZL_AVX2 void micro_float(const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0, float* y,
                         int64_t ldy, ReadAhead* ahead) {
  const int64_t n = in.cols;
  const uint8_t* wr[R];
  const float* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  for (int t = 0; t < T; ++t) xr[t] = in.x + (t0 + t) * n;
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    if (ahead != nullptr) ahead->step(R * 8 * static_cast<int64_t>(dtype_block_bytes(D)));
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(xr[t] + k);
    for (int r = 0; r < R; ++r) {
      __m256 wv = load_f32x8<D>(wr[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  float tail_w[8] = {};  // filled below when k < n, the only time it is read
  for (int r = 0; r < R; ++r) {
    if (k < n) dtype_to_f32(w.dtype, wr[r] + k * dtype_block_bytes(D), tail_w, n - k);
    for (int t = 0; t < T; ++t) {
      float sum = hsum(acc[r][t]);
      for (int64_t j = k; j < n; ++j) sum += tail_w[j - k] * xr[t][j];
      y[(t0 + t) * ldy + r0 + r] = sum;
    }
  }
}

// Per block and token, the activation term each of the 8 lanes of the
// integer dot takes (the lanes are summed at the end): - xds for Q4_0
// (8 * d_x * sum(q) in all, the codes' + 8), - 2 xds for Q5_0 (+ 16), and
// xds / 8 for Q5_1, times its min m (m * d_x * sum(q) in all). Multiplying by
// 2 or 1 / 8 is exact.
template <DType D>
constexpr float kSumPerLane = D == DType::kQ4_0 ? 1.0f : D == DType::kQ5_0 ? 2.0f : 0.125f;

template <DType D, int R, int T>
ZL_AVX2 void micro_quant(const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0, float* y,
                         int64_t ldy, ReadAhead* ahead) {
  const int64_t n = in.cols, num_blocks = n / 32;
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    if (ahead != nullptr) ahead->step(R * kBlockBytes<D>);
    __m256i xv[T];
    __m256 dx[T], cx[T];
    for (int t = 0; t < T; ++t) {
      const int64_t tok = t0 + t;
      xv[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in.xq + tok * n + b * 32));
      dx[t] = _mm256_set1_ps(in.xd[tok * num_blocks + b]);
      cx[t] = _mm256_set1_ps(in.xds[tok * num_blocks + b] * kSumPerLane<D>);
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = wr[r] + b * kBlockBytes<D>;
      if constexpr (D == DType::kQ4_0) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        __m256 dw = _mm256_set1_ps(_cvtsh_ss(h));
        __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
        __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes), _mm256_set1_epi8(0x0f));
        for (int t = 0; t < T; ++t) {
          __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv[t]), ones);
          __m256 f = _mm256_fmsub_ps(dx[t], _mm256_cvtepi32_ps(dot), cx[t]);
          acc[r][t] = _mm256_fmadd_ps(dw, f, acc[r][t]);
        }
      } else if constexpr (dtype_is_q5(D)) {
        constexpr int kScaleBytes = D == DType::kQ5_0 ? 2 : 4;  // f16 d (Q5_1: and m)
        uint16_t h[2] = {0, 0};
        std::memcpy(h, p, kScaleBytes);
        const __m256 dw = _mm256_set1_ps(_cvtsh_ss(h[0])), mw = _mm256_set1_ps(_cvtsh_ss(h[1]));
        const __m256i u = q5_codes_u8(p + kScaleBytes);
        for (int t = 0; t < T; ++t) {
          const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, xv[t]), ones));
          if constexpr (D == DType::kQ5_0) {
            acc[r][t] = _mm256_fmadd_ps(dw, _mm256_fmsub_ps(dx[t], dot, cx[t]), acc[r][t]);
          } else {
            acc[r][t] = _mm256_fmadd_ps(dw, _mm256_mul_ps(dx[t], dot), acc[r][t]);
            acc[r][t] = _mm256_fmadd_ps(mw, cx[t], acc[r][t]);
          }
        }
      } else {
        __m256 dw = _mm256_set1_ps(1.0f);
        if constexpr (D == DType::kQ8_0 || D == DType::kIQ4_NL) {
          uint16_t h;
          std::memcpy(&h, p, 2);
          dw = _mm256_set1_ps(_cvtsh_ss(h));
          p += 2;
        }
        __m256i wv;
        if constexpr (D == DType::kIQ4_NL) {
          wv = iq4_codes(p);
        } else {
          wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        }
        __m256i aw = _mm256_abs_epi8(wv);
        for (int t = 0; t < T; ++t) {
          __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv[t], wv)), ones);
          __m256 f = _mm256_mul_ps(dx[t], _mm256_cvtepi32_ps(dot));
          acc[r][t] = _mm256_fmadd_ps(dw, f, acc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const float row_scale = D == DType::kI8 ? w.scales[r0 + r] : 1.0f;
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum(acc[r][t]) * row_scale;
  }
}

// Q2_K's min term of super-block s for T tokens: dmin * m_h * d_x * sum16_h
// over its 16 halves, off each token's accumulator.
template <int T>
ZL_AVX2 inline void q2k_mins(__m128i mins, float dmin, const MatmulInput& in, int64_t s, int64_t t0, __m256* acc) {
  const int64_t num_blocks = in.cols / 32;
  const __m256 dm = _mm256_set1_ps(dmin);
  const __m256 m_lo = _mm256_mul_ps(dm, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mins)));
  const __m256 m_hi = _mm256_mul_ps(dm, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(mins, 8))));
  for (int t = 0; t < T; ++t) {
    const int64_t first = (t0 + t) * num_blocks + 8 * s;  // the super-block's first block
    const __m256 dx = _mm256_loadu_ps(in.xd + first);   // blocks 0..7; each covers halves 2b, 2b + 1
    const __m256 dx_lo = _mm256_permutevar8x32_ps(dx, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    const __m256 dx_hi = _mm256_permutevar8x32_ps(dx, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
    const int32_t* s16 = in.xsum16 + 2 * first;
    const __m256 s_lo = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16)));
    const __m256 s_hi = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s16 + 8)));
    acc[t] = _mm256_fnmadd_ps(m_lo, _mm256_mul_ps(dx_lo, s_lo), acc[t]);
    acc[t] = _mm256_fnmadd_ps(m_hi, _mm256_mul_ps(dx_hi, s_hi), acc[t]);
  }
}

// The 16 half-block scales of super-block p as int16 (super_scales), halves
// 0..7 in both 128-bit lanes of hs[0] and halves 8..15 in both of hs[1]; *d
// the f16 scale d. The min terms (Q4_K, Q5_K: dmin * m_j * xds_j over the 8
// blocks; Q2_K: q2k_mins) come off each token's accumulator here (its lanes
// are only ever summed).
template <DType D, int T>
ZL_AVX2 inline void kquant_super_block(const uint8_t* p, const MatmulInput& in, int64_t s, int64_t t0, __m256* acc,
                                       __m256i* hs, float* d) {
  const SuperScales sc = super_scales<D>(p);
  *d = sc.d;
  if constexpr (D == DType::kQ4_K || D == DType::kQ5_K) {
    const __m256 mn = _mm256_mul_ps(_mm256_set1_ps(sc.dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc.mins)));
    const int64_t num_blocks = in.cols / 32;
    for (int t = 0; t < T; ++t)
      acc[t] = _mm256_fnmadd_ps(mn, _mm256_loadu_ps(in.xds + (t0 + t) * num_blocks + 8 * s), acc[t]);
  } else if constexpr (D == DType::kQ2_K) {
    q2k_mins<T>(sc.mins, sc.dmin, in, s, t0, acc);
  }
  const __m256i words = _mm256_cvtepi8_epi16(sc.half);
  hs[0] = _mm256_permute2x128_si256(words, words, 0x00);
  hs[1] = _mm256_permute2x128_si256(words, words, 0x11);
}

// Super-block tiles on the stored super-blocks. Per block j of 32 and token, the
// integer dot of codes and activations: vpmaddubsw of the unsigned codes and
// x (signed codes: |code| and x with the code's sign) into int16 pairs (at
// most 127 * 127 * 2, IQ4_XS), for Q6_K less 4 * sum16 in each of
// a half's 8 pairs (the codes' + 32: 32 * sum16 a half; at most 16002 + 8128
// in magnitude), then vpmaddwd by each half's integer scale instead of ones
// (lanes 0-3: the first 16 values, 4-7: the last 16; at most 128 * 2 * 24130
// a lane, exact in int32 and f32), times d_x * d: the reference's terms up to
// f32 rounding.
template <DType D, int R, int T>
ZL_AVX2 void micro_kquant(const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0, float* y,
                          int64_t ldy, ReadAhead* ahead) {
  const int64_t n = in.cols, num_blocks = n / 32;
  // vpshufb control: words 2k (low lane) and 2k + 1 (high lane) everywhere, k = 0 here.
  const __m256i pair0 = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
                                         2, 3, 2, 3, 2, 3);
  const uint8_t* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  for (int64_t s = 0; s < n / 256; ++s) {
    if (ahead != nullptr) ahead->step(R * kBlockBytes<D>);
    __m256i hs[R][2];
    float d[R];
    for (int r = 0; r < R; ++r) kquant_super_block<D, T>(wr[r] + s * kBlockBytes<D>, in, s, t0, acc[r], hs[r], &d[r]);
    // Unrolled, the shift counts and scale selectors of each block are constants.
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const int64_t b = 8 * s + j;
      const __m256i pair = _mm256_add_epi8(pair0, _mm256_set1_epi8(static_cast<char>(4 * (j % 4))));
      __m256i xv[T];
      __m256 dx[T];
      __m256i sum4[T];  // Q6_K: 4 * sum16 of each half, in its 128-bit lane's words
      for (int t = 0; t < T; ++t) {
        const int64_t tok = t0 + t;
        xv[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in.xq + tok * n + b * 32));
        dx[t] = _mm256_set1_ps(in.xd[tok * num_blocks + b]);
        if constexpr (D == DType::kQ6_K) {
          const int32_t* s16 = in.xsum16 + (tok * num_blocks + b) * 2;
          sum4[t] = _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>(4 * s16[0])),
                                      _mm_set1_epi16(static_cast<int16_t>(4 * s16[1])));
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256i codes = kquant_codes<D>(wr[r] + s * kBlockBytes<D>, j);
        const __m256i ucodes = kSignedCodes<D> ? _mm256_abs_epi8(codes) : codes;
        const __m256i scale = _mm256_shuffle_epi8(hs[r][j / 4], pair);
        const __m256 dw = _mm256_set1_ps(d[r]);
        for (int t = 0; t < T; ++t) {
          const __m256i x = kSignedCodes<D> ? _mm256_sign_epi8(xv[t], codes) : xv[t];
          __m256i prod = _mm256_maddubs_epi16(ucodes, x);
          if constexpr (D == DType::kQ6_K) prod = _mm256_sub_epi16(prod, sum4[t]);
          __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(prod, scale));
          acc[r][t] = _mm256_fmadd_ps(dot, _mm256_mul_ps(dx[t], dw), acc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = hsum(acc[r][t]);
}

// ahead: nullptr, or the next group's read-ahead (tile()), stepped with the
// bytes of the R rows read per block.
template <DType D, int R, int T>
ZL_AVX2 inline void micro(const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0, float* y,
                          int64_t ldy, ReadAhead* ahead) {
  if constexpr (D == DType::kQ8_0 || D == DType::kQ4_0 || D == DType::kI8 || D == DType::kIQ4_NL || dtype_is_q5(D)) {
    micro_quant<D, R, T>(w, in, r0, t0, y, ldy, ahead);
  } else if constexpr (dtype_has_super_blocks(D)) {
    micro_kquant<D, R, T>(w, in, r0, t0, y, ldy, ahead);
  } else {
    micro_float<D, R, T>(w, in, r0, t0, y, ldy, ahead);
  }
}

// Tiles of 4 rows x 2 tokens fit the 16 ymm registers (8 accumulators).
constexpr int kAvx2TokenTile = 2;

template <DType D, int T>
ZL_AVX2 void rows_for_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                             int64_t t0, float* y, int64_t ldy, ReadAhead* ahead) {
  int64_t r = row_begin;
  for (; r + 4 <= row_end; r += 4) micro<D, 4, T>(w, in, r, t0, y, ldy, ahead);
  for (; r < row_end; ++r) micro<D, 1, T>(w, in, r, t0, y, ldy, ahead);
}

template <DType D>
ZL_AVX2 void token_tiles(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                         int64_t ldy, ReadAhead* ahead) {
  int64_t t = 0;
  for (; t + kAvx2TokenTile <= in.num_tokens; t += kAvx2TokenTile)
    rows_for_tokens<D, kAvx2TokenTile>(w, in, row_begin, row_end, t, y, ldy, ahead);
  if (t < in.num_tokens) rows_for_tokens<D, 1>(w, in, row_begin, row_end, t, y, ldy, ahead);
}

// Decode batches (group_first) run every token tile on a group of 16 rows
// before the next, each weight read from memory once, while the next
// group's rows are read ahead (ReadAhead, as the AVX-512 kernels do; for
// one token too, where the hardware prefetchers alone left the stream at
// ~0.35-0.5 of the read bandwidth); prefill runs each token tile over the
// whole row block. The same micro-kernels in either order, so the same bits.
constexpr int64_t kAvx2GroupRows = 16;

template <DType D>
ZL_AVX2 void tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                  int64_t ldy) {
  if (!group_first(in.num_tokens)) return token_tiles<D>(w, in, row_begin, row_end, y, ldy, nullptr);
  for (int64_t g = row_begin; g < row_end; g += kAvx2GroupRows) {
    const int64_t g_end = std::min(g + kAvx2GroupRows, row_end);
    ReadAhead ahead = ReadAhead::over_tiles(w.row(g_end), in.num_tokens, kAvx2TokenTile);
    token_tiles<D>(w, in, g, g_end, y, ldy, &ahead);
  }
}

}  // namespace

TileKernel tile_kernel_avx2(DType dtype) {
  switch (dtype) {
    case DType::kF32: return tile<DType::kF32>;
    case DType::kF16: return tile<DType::kF16>;
    case DType::kBF16: return tile<DType::kBF16>;
    case DType::kQ8_0: return tile<DType::kQ8_0>;
    case DType::kQ4_0: return tile<DType::kQ4_0>;
    case DType::kI8: return tile<DType::kI8>;
    case DType::kQ4_K: return tile<DType::kQ4_K>;
    case DType::kQ6_K: return tile<DType::kQ6_K>;
    case DType::kQ5_0: return tile<DType::kQ5_0>;
    case DType::kQ5_1: return tile<DType::kQ5_1>;
    case DType::kQ5_K: return tile<DType::kQ5_K>;
    case DType::kQ3_K: return tile<DType::kQ3_K>;
    case DType::kQ2_K: return tile<DType::kQ2_K>;
    case DType::kIQ4_NL: return tile<DType::kIQ4_NL>;
    case DType::kIQ4_XS: return tile<DType::kIQ4_XS>;
  }
  return nullptr;
}

}  // namespace zl::cpu
