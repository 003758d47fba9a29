// AVX-512 VNNI tile kernels on the stored blocks of the formats that have no
// packed layout: Q5_0, Q5_1, IQ4_NL (blocks of 32) and Q5_K, Q3_K, Q2_K,
// IQ4_XS (super-blocks of 256). Each block's 32 codes come from the 256-bit
// helpers of block_codes_avx2.h, two blocks to a 512-bit register (the first
// in the low half), and vpdpbusd of the codes (unsigned; signed ones as |code|
// against x with the code's sign) and the token's 64 activation codes gives
// 16 int32 lanes, each the exact dot of 4 values: lanes 0-7 block b (0-3 its
// first 16 values, 4-7 the last 16), 8-15 block b + 1. Each lane is converted
// to f32 and scaled by its block's (or half block's) weight scale times d_x,
// then the mins come off as in the AVX2 kernels (matmul_avx2.cpp):
//   Q5_0 / Q5_1:   acc += d_w * (d_x * dot - 2 xds), acc += m * xds / 8 (a lane's share)
//   IQ4_NL:        acc += d_w * d_x * dot
//   super-blocks:  acc += (d * sc_half) * d_x * dot, less the super-block's
//                  min terms (Q4_K-like dmin * m_j * xds_j; Q2_K per half).
// The same instructions for each (row, token) whatever the tile, so a row's
// result does not depend on the batch.
#include "kernels/cpu/immintrin_quiet.h"

#include "kernels/cpu/block_codes_avx2.h"
#include "kernels/cpu/matmul_kernels.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

namespace zl::cpu {
namespace {

// x with each byte negated where c's is negative: |c| * that = c * x.
ZL_AVX512 inline __m512i with_sign_of(__m512i x, __m512i c) {
  return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(c), _mm512_setzero_si512(), x);
}

ZL_AVX512 inline __m512i pair(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
ZL_AVX512 inline __m512 pair(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
}
ZL_AVX512 inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The share of xds each lane of a Q5_0 / Q5_1 block takes (matmul_avx2.cpp).
template <DType D>
constexpr float kQ5SumPerLane = D == DType::kQ5_0 ? 2.0f : 0.125f;

// Blocks b and (when `both`) b + 1 of R rows against T tokens.
template <DType D, int R, int T>
ZL_AVX512 inline void block32_pair(const uint8_t* const* wr, const MatmulInput& in, int64_t b, int64_t t0, bool both,
                                   __m512 (*acc)[T]) {
  const int64_t n = in.cols, num_blocks = n / 32;
  __m512i xv[T];
  __m512 dx[T], cx[T];
  for (int t = 0; t < T; ++t) {
    const int64_t tok = t0 + t, at = tok * num_blocks + b;
    const int8_t* xq = in.xq + tok * n + b * 32;
    xv[t] = both ? _mm512_loadu_si512(xq)
                 : _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq)));
    dx[t] = pair(in.xd[at], both ? in.xd[at + 1] : 0.0f);
    if constexpr (D != DType::kIQ4_NL)
      cx[t] = _mm512_mul_ps(pair(in.xds[at], both ? in.xds[at + 1] : 0.0f), _mm512_set1_ps(kQ5SumPerLane<D>));
  }
  constexpr int64_t kBytes = kBlockBytes<D>;
  for (int r = 0; r < R; ++r) {
    const uint8_t* p0 = wr[r] + b * kBytes;
    const uint8_t* p1 = both ? p0 + kBytes : p0;  // the single last block: its high half is zeroed below
    const __m512 dw = pair(f16_at(p0), both ? f16_at(p1) : 0.0f);
    if constexpr (D == DType::kIQ4_NL) {
      const __m512i codes = pair(iq4_codes(p0 + 2), iq4_codes(p1 + 2));
      const __m512i u = _mm512_abs_epi8(codes);
      for (int t = 0; t < T; ++t) {
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, with_sign_of(xv[t], codes));
        acc[r][t] = _mm512_fmadd_ps(dw, _mm512_mul_ps(dx[t], _mm512_cvtepi32_ps(dot)), acc[r][t]);
      }
    } else {
      constexpr int kScaleBytes = D == DType::kQ5_0 ? 2 : 4;  // f16 d (Q5_1: and m)
      const __m512i codes = pair(q5_codes_u8(p0 + kScaleBytes), q5_codes_u8(p1 + kScaleBytes));
      for (int t = 0; t < T; ++t) {
        const __m512 dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), codes, xv[t]));
        if constexpr (D == DType::kQ5_0) {
          acc[r][t] = _mm512_fmadd_ps(dw, _mm512_fmsub_ps(dx[t], dot, cx[t]), acc[r][t]);
        } else {
          const __m512 mw = pair(f16_at(p0 + 2), both ? f16_at(p1 + 2) : 0.0f);
          acc[r][t] = _mm512_fmadd_ps(dw, _mm512_mul_ps(dx[t], dot), acc[r][t]);
          acc[r][t] = _mm512_fmadd_ps(mw, cx[t], acc[r][t]);
        }
      }
    }
  }
}

// Super-block s of one row: its 16 half-block scales d * sc as f32 (half h in
// lane h), its min terms taken off each token's accumulator.
template <DType D, int T>
ZL_AVX512 inline __m512 super_block(const uint8_t* p, const MatmulInput& in, int64_t s, int64_t t0, __m512* acc) {
  const SuperScales sc = super_scales<D>(p);
  const int64_t num_blocks = in.cols / 32;
  if constexpr (D == DType::kQ5_K) {
    const __m256 mn = _mm256_mul_ps(_mm256_set1_ps(sc.dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc.mins)));
    for (int t = 0; t < T; ++t) {
      const __m256 xds = _mm256_loadu_ps(in.xds + (t0 + t) * num_blocks + 8 * s);
      acc[t] = _mm512_fnmadd_ps(_mm512_zextps256_ps512(mn), _mm512_zextps256_ps512(xds), acc[t]);
    }
  } else if constexpr (D == DType::kQ2_K) {
    // dmin * m_h * d_x * sum16_h over the 16 halves (block h / 2's d_x).
    const __m512 mn = _mm512_mul_ps(_mm512_set1_ps(sc.dmin), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc.mins)));
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    for (int t = 0; t < T; ++t) {
      const int64_t first = (t0 + t) * num_blocks + 8 * s;
      const __m512 dx = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(in.xd + first)));
      const __m512 sum16 = _mm512_cvtepi32_ps(_mm512_loadu_si512(in.xsum16 + 2 * first));
      acc[t] = _mm512_fnmadd_ps(mn, _mm512_mul_ps(dx, sum16), acc[t]);
    }
  }
  return _mm512_mul_ps(_mm512_set1_ps(sc.d), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc.half)));
}

template <DType D, int R, int T>
ZL_AVX512 void micro_super(const uint8_t* const* wr, const MatmulInput& in, int64_t t0, __m512 (*acc)[T]) {
  const int64_t n = in.cols, num_blocks = n / 32;
  for (int64_t s = 0; s < n / 256; ++s) {
    __m512 scale[R];
    for (int r = 0; r < R; ++r) scale[r] = super_block<D, T>(wr[r] + s * kBlockBytes<D>, in, s, t0, acc[r]);
    // Unrolled, the code helpers' shift counts and the lane selectors are constants.
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {  // blocks 2q, 2q + 1 of the super-block
      const int64_t b = 8 * s + 2 * q;
      const __m512i halves = _mm512_setr_epi32(4 * q, 4 * q, 4 * q, 4 * q, 4 * q + 1, 4 * q + 1, 4 * q + 1,
                                               4 * q + 1, 4 * q + 2, 4 * q + 2, 4 * q + 2, 4 * q + 2, 4 * q + 3,
                                               4 * q + 3, 4 * q + 3, 4 * q + 3);
      __m512i xv[T];
      __m512 dx[T];
      for (int t = 0; t < T; ++t) {
        const int64_t tok = t0 + t;
        xv[t] = _mm512_loadu_si512(in.xq + tok * n + b * 32);
        dx[t] = pair(in.xd[tok * num_blocks + b], in.xd[tok * num_blocks + b + 1]);
      }
      for (int r = 0; r < R; ++r) {
        const uint8_t* p = wr[r] + s * kBlockBytes<D>;
        const __m512i codes = pair(kquant_codes<D>(p, 2 * q), kquant_codes<D>(p, 2 * q + 1));
        const __m512i u = kSignedCodes<D> ? _mm512_abs_epi8(codes) : codes;
        const __m512 lane_scale = _mm512_permutexvar_ps(halves, scale[r]);
        for (int t = 0; t < T; ++t) {
          const __m512i x = kSignedCodes<D> ? with_sign_of(xv[t], codes) : xv[t];
          const __m512 dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x));
          acc[r][t] = _mm512_fmadd_ps(dot, _mm512_mul_ps(lane_scale, dx[t]), acc[r][t]);
        }
      }
    }
  }
}

template <DType D, int R, int T>
ZL_AVX512 void micro(const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0, float* y, int64_t ldy) {
  const uint8_t* wr[R];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  if constexpr (dtype_has_super_blocks(D)) {
    micro_super<D, R, T>(wr, in, t0, acc);
  } else {
    const int64_t num_blocks = in.cols / 32;
    for (int64_t b = 0; b < num_blocks; b += 2) block32_pair<D, R, T>(wr, in, b, t0, b + 1 < num_blocks, acc);
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
}

template <DType D, int R, int T>
ZL_AVX512 void rows_for_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               int64_t t0, float* y, int64_t ldy) {
  int64_t r = row_begin;
  for (; r + R <= row_end; r += R) micro<D, R, T>(w, in, r, t0, y, ldy);
  for (; r < row_end; ++r) micro<D, 1, T>(w, in, r, t0, y, ldy);
}

// Tiles of 2 rows x 4 tokens (a row's codes decoded once for 4 tokens), and
// 4 rows for the 1-3 tokens left (decode: 4 independent rows in flight).
template <DType D>
ZL_AVX512 void tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                    int64_t ldy) {
  int64_t t = 0;
  for (; t + 4 <= in.num_tokens; t += 4) rows_for_tokens<D, 2, 4>(w, in, row_begin, row_end, t, y, ldy);
  switch (in.num_tokens - t) {
    case 3: return rows_for_tokens<D, 4, 3>(w, in, row_begin, row_end, t, y, ldy);
    case 2: return rows_for_tokens<D, 4, 2>(w, in, row_begin, row_end, t, y, ldy);
    case 1: return rows_for_tokens<D, 4, 1>(w, in, row_begin, row_end, t, y, ldy);
    default: return;
  }
}

}  // namespace

TileKernel tile_kernel_avx512_stored(DType dtype) {
  switch (dtype) {
    case DType::kQ5_0: return tile<DType::kQ5_0>;
    case DType::kQ5_1: return tile<DType::kQ5_1>;
    case DType::kIQ4_NL: return tile<DType::kIQ4_NL>;
    case DType::kQ5_K: return tile<DType::kQ5_K>;
    case DType::kQ3_K: return tile<DType::kQ3_K>;
    case DType::kQ2_K: return tile<DType::kQ2_K>;
    case DType::kIQ4_XS: return tile<DType::kIQ4_XS>;
    default: return nullptr;
  }
}

}  // namespace zl::cpu
