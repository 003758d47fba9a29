// Internal to the matmul: the codes and scales of the stored blocks of the
// 5-bit, IQ4 and super-block formats as AVX2 registers, for the AVX2 tiles
// (matmul_avx2.cpp), which also serve unpacked matrices on AVX-512 CPUs.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/dtype.h"

#define ZL_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace zl::cpu {

// The 32 codes of 16 bytes of IQ4 indices (element j < 16: the low nibble of
// byte j, j + 16: its high nibble) as the signed grid values kIq4Values.
ZL_AVX2 inline __m256i iq4_codes(const uint8_t* qs) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i index = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes), _mm256_set1_epi8(0x0f));
  const __m128i grid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values));
  return _mm256_shuffle_epi8(_mm256_set_m128i(grid, grid), index);
}

// The 32 codes 0..31 of a Q5_0 / Q5_1 block from its qh and qs bytes (core/
// dtype.h), element j in byte j: the nibbles as Q4_0's, bit 4 of byte j from
// bit j of qh (a little-endian u32) as ggml's bytes_from_bits_32 spreads it:
// vpshufb puts qh's byte j / 8 in byte j, then every bit but bit j % 8 is set
// and the byte compared with all ones.
ZL_AVX2 inline __m256i q5_codes_u8(const uint8_t* qh_qs) {
  int32_t qh;
  std::memcpy(&qh, qh_qs, 4);
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh_qs + 4));
  const __m256i low = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), _mm256_set1_epi8(0x0f));
  const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  const __m256i other_bits = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
  const __m256i bits = _mm256_or_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(qh), spread), other_bits);
  const __m256i high = _mm256_and_si256(_mm256_cmpeq_epi8(bits, _mm256_set1_epi8(-1)), _mm256_set1_epi8(0x10));
  return _mm256_or_si256(low, high);
}

// Block j (0..7) of super-block p as 32 bytes (core/dtype.h's kquant_block):
// unsigned for Q4_K (codes 0..15: block 2c / 2c + 1 the low / high nibbles of
// qs bytes 32c..), Q5_K (and bit j of qh[l] as bit 4), Q6_K (codes + 32,
// 0..63: low nibble of ql[64 h + 32 (g % 2) + l], the high one when g >= 2,
// under bits 2g, 2g + 1 of qh[32 h + l], for h = j / 4, g = j % 4) and Q2_K
// (0..3: bits 2g, 2g + 1 of qs[32 h + l]); signed for Q3_K (Q2_K's bits, less
// 4 where bit j of hmask[l] is clear) and IQ4_XS (grid values).
template <DType D>
constexpr bool kSignedCodes = D == DType::kQ3_K || D == DType::kIQ4_XS;

ZL_AVX2 inline __m256i load(const uint8_t* a) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)); }
// Each byte of v shifted right by `shift` (< 8) and masked.
ZL_AVX2 inline __m256i bits(__m256i v, int shift, __m256i mask) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(shift)), mask);
}

template <DType D>
ZL_AVX2 inline __m256i kquant_codes(const uint8_t* p, int j) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
  if constexpr (D == DType::kQ4_K) {
    return bits(load(p + 16 + 32 * (j / 2)), 4 * (j % 2), low4);
  } else if constexpr (D == DType::kQ5_K) {
    const __m256i high = _mm256_slli_epi16(bits(load(p + 16), j, one), 4);
    return _mm256_or_si256(bits(load(p + 48 + 32 * (j / 2)), 4 * (j % 2), low4), high);
  } else if constexpr (D == DType::kQ6_K) {
    const int h = j / 4, g = j % 4;
    const __m256i lo = bits(load(p + 64 * h + 32 * (g % 2)), 4 * (g / 2), low4);
    const __m256i hi = bits(load(p + 128 + 32 * h), 2 * g, _mm256_set1_epi8(3));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
  } else if constexpr (D == DType::kQ2_K) {
    return bits(load(p + 16 + 32 * (j / 4)), 2 * (j % 4), _mm256_set1_epi8(3));
  } else if constexpr (D == DType::kQ3_K) {
    const __m256i low = bits(load(p + 32 + 32 * (j / 4)), 2 * (j % 4), _mm256_set1_epi8(3));
    const __m256i high = _mm256_slli_epi16(bits(load(p), j, one), 2);
    return _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(4));
  } else {
    static_assert(D == DType::kIQ4_XS);
    return iq4_codes(p + 8 + 16 * j);
  }
}

// The scales of super-block p: half the 16 half-block scales as int8
// (Q4_K, Q5_K, IQ4_XS: each block's scale twice; Q6_K: the int8 scales;
// Q3_K, Q2_K: the 16 scales; 32 taken off the 6-bit signed ones), d and dmin
// the f16 scales, mins the mins as uint8 (Q4_K, Q5_K: 8 in the low half;
// Q2_K: 16).
struct SuperScales {
  __m128i half, mins;
  float d, dmin;
};

template <DType D>
ZL_AVX2 inline SuperScales super_scales(const uint8_t* p) {
  SuperScales s{_mm_setzero_si128(), _mm_setzero_si128(), 0.0f, 0.0f};
  if constexpr (D == DType::kQ4_K || D == DType::kQ5_K) {
    // kquant_scales' unpacking, four bytes at a time in 32-bit words
    // u[i] = bytes 4i..4i + 3 of the 12 (scales 4..7: the nibbles of u[2]
    // under the top 2 bits of u[0]; mins 4..7: of u[2] >> 4 under u[1]'s).
    uint32_t u[3];
    uint16_t d_bits[2];
    std::memcpy(d_bits, p, 4);
    std::memcpy(u, p + 4, 12);
    const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, bits45 = 0x30303030;
    const uint64_t sc = (u[0] & low6) | uint64_t{(u[2] & low4) | ((u[0] >> 2) & bits45)} << 32;
    const uint64_t mins = (u[1] & low6) | uint64_t{((u[2] >> 4) & low4) | ((u[1] >> 2) & bits45)} << 32;
    const __m128i s8 = _mm_cvtsi64_si128(static_cast<int64_t>(sc));
    s.half = _mm_unpacklo_epi8(s8, s8);
    s.mins = _mm_cvtsi64_si128(static_cast<int64_t>(mins));
    s.d = _cvtsh_ss(d_bits[0]);
    s.dmin = _cvtsh_ss(d_bits[1]);
  } else if constexpr (D == DType::kQ6_K) {
    s.half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192));
    uint16_t h;
    std::memcpy(&h, p + 208, 2);
    s.d = _cvtsh_ss(h);
  } else if constexpr (D == DType::kQ2_K) {
    // Byte h of the 16: scale in the low nibble, min in the high one.
    const __m128i both = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    s.half = _mm_and_si128(both, _mm_set1_epi8(0x0f));
    s.mins = _mm_and_si128(_mm_srli_epi16(both, 4), _mm_set1_epi8(0x0f));
    uint16_t d_bits[2];
    std::memcpy(d_bits, p + 80, 4);
    s.d = _cvtsh_ss(d_bits[0]);
    s.dmin = _cvtsh_ss(d_bits[1]);
  } else if constexpr (D == DType::kQ3_K) {
    // kquant_scales' Q3_K unpacking: the nibbles of s[0..7] (low ones for
    // scales 0..7, high ones for 8..15) under bits 2 (i / 4), + 1 of
    // s[8 + i % 4]: the u32 s[8..11] in each 32-bit lane, lane k shifted by 2k.
    const __m128i s8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 96));
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m128i nibbles = _mm_unpacklo_epi64(_mm_and_si128(s8, low4), _mm_and_si128(_mm_srli_epi16(s8, 4), low4));
    int32_t h;
    std::memcpy(&h, p + 104, 4);
    const __m128i top = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(h), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    s.half = _mm_sub_epi8(_mm_or_si128(nibbles, _mm_slli_epi16(top, 4)), _mm_set1_epi8(32));
    uint16_t d_bits;
    std::memcpy(&d_bits, p + 108, 2);
    s.d = _cvtsh_ss(d_bits);
  } else {
    static_assert(D == DType::kIQ4_XS);
    // Scale j: nibble j % 2 of byte 4 + j / 2 under bits 2j, 2j + 1 of the u16 at 2, less 32.
    uint32_t low;
    uint16_t d_bits, high;
    std::memcpy(&d_bits, p, 2);
    std::memcpy(&high, p + 2, 2);
    std::memcpy(&low, p + 4, 4);
    uint64_t sc = 0;
    for (int j = 0; j < 8; ++j)
      sc |= uint64_t{((low >> (4 * j)) & 0x0f) | ((high >> (2 * j)) & 3u) << 4} << (8 * j);
    const __m128i s8 = _mm_sub_epi8(_mm_cvtsi64_si128(static_cast<int64_t>(sc)), _mm_set1_epi8(32));
    s.half = _mm_unpacklo_epi8(s8, s8);
    s.d = _cvtsh_ss(d_bits);
  }
  return s;
}

}  // namespace zl::cpu
