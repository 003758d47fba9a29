// Internal to the quantized matmul kernels: the AVX-512 VNNI tiles
// (matmul_avx512_quant.cpp) and the AMX-INT8 tiles (matmul_amx_quant.cpp)
// read their weight rows and run each block's float step through the
// code here, so that an output's bits do not depend on which ran it.
//
// The kernels are row-interleaved: each vector lane belongs to one of 16
// weight rows, so a block's scale multiplies 16 rows at once and no
// horizontal sum is needed.
//
// For 16 rows and one block b of 32 columns, v[k] (k = 0..7) holds in lane i
// the unsigned codes of elements 4k..4k+3 of row i; vpdpbusd with the
// activation's 4 codes of those elements broadcast gives, after the 8 k, the
// exact integer dot of each row's block with the token's block:
//   D_i = sum_j u_ij * q_j,  u = code + 128 (Q8_0, I8: top bit flipped;
//   Q4_0: 16 * stored nibble = 16 * code + 128, its scale divided by 16, exact),
//   IQ4_NL: u = grid value + 128, looked up from the packed index; Q5_0:
//   u = 8 * (code + 16), its scale divided by 8),
//   so sum_j code_ij * q_j = D_i - 128 * sum_j q_j, and per block
//   acc_i += d_w,i * (d_x * float(D_i) - 128 * d_x * sum(q))   (I8: no d_w;
//   its row scale multiplies the sum at the end; IQ4_XS the same with
//   d_w = d * (scale - 32) of the block).
// The k-quants keep their scales per block (Q4_K: d * sc and a min dmin * m)
// or half block (Q6_K: d * sc for each 16 values), products that are exact
// in f32; per block
//   Q4_K: u = 16 * code (0..15), no offset:  acc_i += (d * sc / 16) * (d_x * D_i) - min_i * d_x * sum(q)
//   Q5_K: u = 8 * code (0..31), the same with d * sc / 8 (Q5_1: d / 8, min -m)
//   Q6_K: u = code + 32, per half h:         acc_i += (d * sc_h) * d_x * float(D_ih - 32 * sum_h(q))
// (the integer corrections exact); Q3_K, u = code + 4 (0..7), and Q2_K, u =
// code (0..3), whose halves' dots C_h = sum_h(code q) and sums S_h = sum_h(q)
// fit 16 bits, sum the halves in integers (vpmaddwd, exact):
//   Q3_K: C_h = D_ih - 4 S_h:                acc_i += d_x * (d * sum_h (sc_h - 32) C_h)
//   Q2_K:                                    acc_i += d_x * (d * sum_h sc_h C_h - dmin * sum_h m_h S_h)
// They, Q5_0, Q5_1 and IQ4_NL are read packed only (the loader packs every
// matrix on AVX-512); an unpacked one goes to the AVX2 kernels, which read
// the stored blocks.
// Rows come from the packed layout of matmul.h when the matrix has one (v[k]
// as stored there: one sequential stream, nothing to transpose), otherwise
// straight from the stored blocks, transposed in registers (decode: each
// byte is read once), or from a panel of 32 rows transposed once and read by
// every token tile (prefill). All give the same v[k] and scales and run the
// same instructions per output, so a row's result does not depend on the
// batch, the tile, the thread split or whether the matrix is packed.
#pragma once

#include "kernels/cpu/immintrin_quiet.h"

#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))
#define ZL_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

namespace zl::cpu::quant_avx512 {

constexpr int kGroup = 16;  // rows per vector
static_assert(kGroup == kPackRows);

// A block's weight scales per lane: dw (k-quants: of the first half block),
// hi (Q6_K: of the second half), min (Q4_K, Q5_K, Q5_1). Q3_K, Q2_K: dw
// (Q2_K: and min) hold the halves' integer scales (mins), two 16-bit words a
// lane (bit cast), hi (min_hi) the super-block's d (dmin).
struct BlockScales {
  __m512 dw, hi, min, min_hi;
};

// 8 x 8 transpose of 32-bit words in each 256-bit half: r[j] holds row j in
// its low half and row j + 8 in its high half; out[k] lane i = word k of row i.
ZL_AVX512 inline void transpose_8x8_halves(const __m512i* r, __m512i* out) {
  __m512i t[8], u[8];
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm512_unpacklo_epi32(r[j], r[j + 1]);
    t[j + 1] = _mm512_unpackhi_epi32(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    u[j] = _mm512_unpacklo_epi64(t[j], t[j + 2]);
    u[j + 1] = _mm512_unpackhi_epi64(t[j], t[j + 2]);
    u[j + 2] = _mm512_unpacklo_epi64(t[j + 1], t[j + 3]);
    u[j + 3] = _mm512_unpackhi_epi64(t[j + 1], t[j + 3]);
  }
  // u[k] (rows 0-3 | 8-11) and u[k + 4] (rows 4-7 | 12-15): 128-bit lanes
  // 0, 2 hold word k, lanes 1, 3 word k + 4.
  const __m512i lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
  const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm512_permutex2var_epi64(u[k], lo, u[k + 4]);
    out[k + 4] = _mm512_permutex2var_epi64(u[k], hi, u[k + 4]);
  }
}

// Block b of 16 rows (row[i]: the start of row i): v[0..7] and the block scales.
template <DType D>
ZL_AVX512 inline void load_block(const uint8_t* const* row, __m512i scale_offsets, int64_t b, __m512i* v,
                                 __m512* dw) {
  const int64_t at = b * kBlockBytes<D>;
  const int64_t codes = D == DType::kI8 ? 0 : 2;  // the f16 scale opens Q8_0 / Q4_0 blocks
  if constexpr (D == DType::kQ4_0) {
    // Byte j holds element j (low nibble) and element j + 16 (high nibble):
    // 16 bytes a row, 4 rows a vector (row j + 4L in 128-bit lane L), then a
    // 4 x 4 transpose of words per lane gives w[m] lane i = bytes 4m..4m+3 of row i.
    __m512i z[4], t[4], w[4];
    for (int j = 0; j < 4; ++j) {
      __m512i a = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[j] + at + codes)));
      a = _mm512_inserti32x4(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[j + 4] + at + codes)), 1);
      a = _mm512_inserti32x4(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[j + 8] + at + codes)), 2);
      z[j] = _mm512_inserti32x4(a, _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[j + 12] + at + codes)), 3);
    }
    t[0] = _mm512_unpacklo_epi32(z[0], z[1]);
    t[1] = _mm512_unpackhi_epi32(z[0], z[1]);
    t[2] = _mm512_unpacklo_epi32(z[2], z[3]);
    t[3] = _mm512_unpackhi_epi32(z[2], z[3]);
    w[0] = _mm512_unpacklo_epi64(t[0], t[2]);
    w[1] = _mm512_unpackhi_epi64(t[0], t[2]);
    w[2] = _mm512_unpacklo_epi64(t[1], t[3]);
    w[3] = _mm512_unpackhi_epi64(t[1], t[3]);
    const __m512i high = _mm512_set1_epi8(static_cast<char>(0xf0));
    for (int m = 0; m < 4; ++m) {
      v[m] = _mm512_and_si512(_mm512_slli_epi32(w[m], 4), high);
      v[m + 4] = _mm512_and_si512(w[m], high);
    }
  } else {
    __m512i r[8];
    for (int j = 0; j < 8; ++j)
      r[j] = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[j] + at + codes))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[j + 8] + at + codes)), 1);
    transpose_8x8_halves(r, v);
    const __m512i top = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int k = 0; k < 8; ++k) v[k] = _mm512_xor_si512(v[k], top);
  }
  if constexpr (D != DType::kI8) {
    // The gather reads each scale with the 2 code bytes after it.
    *dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(scale_offsets, row[0] + at, 1)));
    if constexpr (D == DType::kQ4_0) *dw = _mm512_mul_ps(*dw, _mm512_set1_ps(1.0f / 16.0f));
  }
}

// Rows read from the stored blocks; rows past the end repeat the last row.
template <DType D>
struct StoredRows {
  const uint8_t* row[kGroup];
  __m512i scale_offsets;  // row i's offset from row 0, bytes
  ZL_AVX512 StoredRows(const WeightMatrix& w, int64_t r0, int64_t row_end) {
    const int64_t last = std::min<int64_t>(kGroup, row_end - r0) - 1;
    for (int i = 0; i < kGroup; ++i) row[i] = w.row(r0 + std::min<int64_t>(i, last));
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    scale_offsets = _mm512_mullo_epi32(_mm512_min_epi32(lane, _mm512_set1_epi32(static_cast<int>(last))),
                                       _mm512_set1_epi32(static_cast<int>(w.row_bytes())));
  }
  template <int T>
  ZL_AVX512 void block(int64_t b, __m512i* v, BlockScales* s) const {
    // Decoding reads 16 short streams; start each one 4 blocks ahead.
    if constexpr (T < 4)
      for (int i = 0; i < kGroup; ++i)
        _mm_prefetch(reinterpret_cast<const char*>(row[i] + (b + 4) * kBlockBytes<D>), _MM_HINT_T0);
    load_block<D>(row, scale_offsets, b, v, &s->dw);
  }
};

// Rows of group `group` read from the packed layout (matmul.h).
template <DType D>
struct PackedRows {
  static constexpr int64_t kScaleLanes = D == DType::kQ5_1 ? 2 * kGroup : kGroup;  // f16 per block
  const uint8_t* codes = nullptr;    // this group's [num_blocks, packed_code_bytes(D)]
  const uint16_t* scales = nullptr;  // this group's [num_blocks, 16] f16 (Q5_1: [num_blocks, 2, 16]: d, m)
  const uint8_t* kscales = nullptr;  // this group's [num_blocks / 8, packed_kscale_bytes(D)] (k-quants)
  ZL_AVX512 void at_group(const WeightMatrix& w, int64_t group) {
    const int64_t num_blocks = w.cols / 32, num_groups = (w.rows + kGroup - 1) / kGroup;
    codes = w.packed + group * num_blocks * packed_code_bytes(D);
    const uint8_t* after_codes = w.packed + num_groups * num_blocks * packed_code_bytes(D);
    if constexpr (dtype_has_super_blocks(D)) {
      kscales = after_codes + group * (num_blocks / 8) * packed_kscale_bytes(D);
    } else {
      scales = reinterpret_cast<const uint16_t*>(after_codes) + group * num_blocks * kScaleLanes;
    }
  }
  template <int T>
  ZL_AVX512 void block(int64_t b, __m512i* v, BlockScales* s) const {
    block_codes(b, v);
    block_scales(b, s);
  }
  // Block b's codes alone: v[0..7].
  ZL_AVX512 void block_codes(int64_t b, __m512i* v) const {
    const uint8_t* e = codes + b * packed_code_bytes(D);
    if constexpr (D == DType::kQ4_0 || D == DType::kQ4_K) {
      // As load_block: low nibbles times 16 for elements 4m.., high nibbles for 4m + 16..
      const __m512i high = _mm512_set1_epi8(static_cast<char>(0xf0));
      for (int m = 0; m < 4; ++m) {
        const __m512i w = _mm512_load_si512(e + 64 * m);
        v[m] = _mm512_and_si512(_mm512_slli_epi32(w, 4), high);
        v[m + 4] = _mm512_and_si512(w, high);
      }
    } else if constexpr (D == DType::kIQ4_NL || D == DType::kIQ4_XS) {
      // Each index's grid value + 128 (1..241): vpshufb from the grid in every 128-bit lane.
      const __m128i grid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values));
      const __m512i grid_u8 = _mm512_broadcast_i32x4(_mm_xor_si128(grid, _mm_set1_epi8(static_cast<char>(0x80))));
      const __m512i low4 = _mm512_set1_epi8(0x0f);
      for (int m = 0; m < 4; ++m) {
        const __m512i w = _mm512_load_si512(e + 64 * m);
        v[m] = _mm512_shuffle_epi8(grid_u8, _mm512_and_si512(w, low4));
        v[m + 4] = _mm512_shuffle_epi8(grid_u8, _mm512_and_si512(_mm512_srli_epi32(w, 4), low4));
      }
    } else if constexpr (D == DType::kQ5_K || dtype_is_q5(D)) {
      // The nibbles times 8, then bit 4 of code 4k + j (bit 8j + k of the
      // fifth vector's lane) to bit 7 of byte j of v[k]: u = 8 * code.
      const __m512i mid = _mm512_set1_epi8(0x78), top = _mm512_set1_epi8(static_cast<char>(0x80));
      for (int m = 0; m < 4; ++m) {
        const __m512i w = _mm512_load_si512(e + 64 * m);
        v[m] = _mm512_and_si512(_mm512_slli_epi32(w, 3), mid);
        v[m + 4] = _mm512_and_si512(_mm512_srli_epi32(w, 1), mid);
      }
      const __m512i high = _mm512_load_si512(e + 4 * 64);
      for (int k = 0; k < 8; ++k)  // v[k] | (high << (7 - k)) & top
        v[k] = _mm512_ternarylogic_epi32(v[k], _mm512_sll_epi32(high, _mm_cvtsi32_si128(7 - k)), top, 0xf8);
    } else if constexpr (D == DType::kQ2_K || D == DType::kQ3_K) {
      // u = code (Q2_K) or code + 4 (Q3_K): bits 0, 1 of code 4k + j from bits
      // 8j + 2q, + 1 of vector k / 4 (q = k % 4); Q3_K's bit 2 from bit 8j + k
      // of vector 2.
      const __m512i low2 = _mm512_set1_epi8(0x03);
      for (int c = 0; c < 2; ++c) {
        const __m512i h = _mm512_load_si512(e + 64 * c);
        for (int q = 0; q < 4; ++q) v[4 * c + q] = _mm512_and_si512(_mm512_srli_epi32(h, 2 * q), low2);
      }
      if constexpr (D == DType::kQ3_K) {
        const __m512i high = _mm512_load_si512(e + 2 * 64), bit2 = _mm512_set1_epi8(0x04);
        for (int k = 0; k < 8; ++k) {  // v[k] | (high moved to bit 2) & bit2
          const __m512i bit = k <= 2 ? _mm512_sll_epi32(high, _mm_cvtsi32_si128(2 - k))
                                     : _mm512_srl_epi32(high, _mm_cvtsi32_si128(k - 2));
          v[k] = _mm512_ternarylogic_epi32(v[k], bit, bit2, 0xf8);
        }
      }
    } else if constexpr (D == DType::kQ6_K) {
      // u = code + 32 (0..63): its low 4 bits from the nibbles, bits 4 and 5
      // of code 4k + j from bits 8j + 2q, + 1 of vector 4 + k / 4 (q = k % 4).
      const __m512i low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
      for (int m = 0; m < 4; ++m) {
        const __m512i w = _mm512_load_si512(e + 64 * m);
        v[m] = _mm512_and_si512(w, low4);
        v[m + 4] = _mm512_and_si512(_mm512_srli_epi32(w, 4), low4);
      }
      for (int c = 0; c < 2; ++c) {
        const __m512i h = _mm512_load_si512(e + 64 * (4 + c));
        const __m512i at[4] = {_mm512_slli_epi32(h, 4), _mm512_slli_epi32(h, 2), h, _mm512_srli_epi32(h, 2)};
        for (int q = 0; q < 4; ++q)  // v | at[q] & top2
          v[4 * c + q] = _mm512_ternarylogic_epi32(v[4 * c + q], at[q], top2, 0xf8);
      }
    } else {
      for (int k = 0; k < 8; ++k) v[k] = _mm512_load_si512(e + 64 * k);
    }
  }
  // Block b's codes as stored: the AMX B tile of Q8_0 and I8 (v[0..7]).
  const uint8_t* tile(int64_t b) const { return codes + b * packed_code_bytes(D); }
  // Block b's scales (and mins) alone.
  ZL_AVX512 void block_scales(int64_t b, BlockScales* s) const {
    if constexpr (dtype_has_super_blocks(D)) {
      load_kscales(b, s);
    } else if constexpr (D != DType::kI8) {
      const uint16_t* f16 = scales + b * kScaleLanes;
      s->dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(f16)));
      if constexpr (D == DType::kQ4_0) s->dw = _mm512_mul_ps(s->dw, _mm512_set1_ps(1.0f / 16.0f));
      if constexpr (dtype_is_q5(D)) s->dw = _mm512_mul_ps(s->dw, _mm512_set1_ps(1.0f / 8.0f));
      if constexpr (D == DType::kQ5_1)  // value = d * code + m: the min term is - (-m) * d_x * sum(q)
        s->min = _mm512_sub_ps(_mm512_setzero_ps(),
                               _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(f16 + kGroup))));
    }
  }
  // The integer scales of block b times the super-block's f16 d (exact).
  ZL_AVX512 void load_kscales(int64_t b, BlockScales* s) const {
    const uint8_t* e = kscales + b / 8 * packed_kscale_bytes(D);
    const int64_t j = b % 8;
    auto bytes = [&](int64_t at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(e + at)); };
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e)));
    if constexpr (D == DType::kQ4_K || D == DType::kQ5_K) {
      const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes(64 + 16 * j)));
      const __m512 m = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes(192 + 16 * j)));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e + 32)));
      constexpr float kCodeScale = D == DType::kQ4_K ? 1.0f / 16.0f : 1.0f / 8.0f;  // u = 16 or 8 * code
      s->dw = _mm512_mul_ps(_mm512_mul_ps(d, sc), _mm512_set1_ps(kCodeScale));
      s->min = _mm512_mul_ps(dmin, m);
    } else if constexpr (D == DType::kIQ4_XS) {
      s->dw = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes(32 + 16 * j))));
    } else if constexpr (D == DType::kQ2_K) {
      // Each half's stored byte: scale in the low nibble, min in the high
      // one; a lane's two halves side by side, widened to 16-bit words.
      const __m512i pairs = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(e + 64 + 32 * j)));
      s->dw = _mm512_castsi512_ps(_mm512_and_si512(pairs, _mm512_set1_epi16(15)));
      s->min = _mm512_castsi512_ps(_mm512_srli_epi16(pairs, 4));
      s->hi = d;
      s->min_hi = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e + 32)));
    } else if constexpr (D == DType::kQ3_K) {  // a lane's two halves' scales less 32, side by side
      s->dw = _mm512_castsi512_ps(_mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(e + 32 + 32 * j))));
      s->hi = d;
    } else {  // Q6_K
      s->dw = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes(32 + 32 * j))));
      s->hi = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes(48 + 32 * j))));
    }
  }
};

template <DType D>
constexpr bool kHalfScales = D == DType::kQ6_K || D == DType::kQ3_K || D == DType::kQ2_K;
template <DType D>
constexpr bool kMins = D == DType::kQ4_K || D == DType::kQ5_K || D == DType::kQ5_1 || D == DType::kQ2_K;
// The scales of a block as panels keep them: those the format's math reads,
// 64 bytes each, in the order dw, hi, min, min_hi.
template <DType D>
constexpr int64_t kScaleEntry = 64 * (1 + kHalfScales<D> + kMins<D> + (D == DType::kQ2_K));
// A panel entry per block: v[0..7], then the scales.
template <DType D>
constexpr int64_t kPanelEntry = 8 * 64 + kScaleEntry<D>;

// A block's scales at e (kScaleEntry<D> bytes).
template <DType D>
ZL_AVX512 inline void load_panel_scales(const uint8_t* e, BlockScales* s) {
  constexpr int64_t kMin = 64 * (1 + kHalfScales<D>);
  s->dw = _mm512_load_ps(e);
  if constexpr (kHalfScales<D>) s->hi = _mm512_load_ps(e + 64);
  if constexpr (kMins<D>) s->min = _mm512_load_ps(e + kMin);
  if constexpr (D == DType::kQ2_K) s->min_hi = _mm512_load_ps(e + kMin + 64);
}
template <DType D>
ZL_AVX512 inline void store_panel_scales(uint8_t* e, const BlockScales& s) {
  constexpr int64_t kMin = 64 * (1 + kHalfScales<D>);
  _mm512_store_ps(e, s.dw);
  if constexpr (kHalfScales<D>) _mm512_store_ps(e + 64, s.hi);
  if constexpr (kMins<D>) _mm512_store_ps(e + kMin, s.min);
  if constexpr (D == DType::kQ2_K) _mm512_store_ps(e + kMin + 64, s.min_hi);
}

// Rows of a packed group whose codes are read as packed and whose scales
// come from a scale panel ([num_blocks, kScaleEntry]).
template <DType D>
struct ScalePanelRows {
  PackedRows<D> rows;
  const uint8_t* scales;
  template <int T>
  ZL_AVX512 void block(int64_t b, __m512i* v, BlockScales* s) const {
    rows.block_codes(b, v);
    load_panel_scales<D>(scales + b * kScaleEntry<D>, s);
  }
};

template <DType D>
struct PanelRows {
  const uint8_t* blocks;  // this group's [num_blocks, kPanelEntry]
  template <int T>
  ZL_AVX512 void block(int64_t b, __m512i* v, BlockScales* s) const {
    const uint8_t* e = tile(b);
    for (int k = 0; k < 8; ++k) v[k] = _mm512_load_si512(e + 64 * k);
    block_scales(b, s);
  }
  // Block b's v[0..7], 8 x 64 bytes: the AMX B tile.
  const uint8_t* tile(int64_t b) const { return blocks + b * kPanelEntry<D>; }
  ZL_AVX512 void block_scales(int64_t b, BlockScales* s) const { load_panel_scales<D>(tile(b) + 8 * 64, s); }
  // Entry e as block() reads it back.
  static ZL_AVX512 void store(uint8_t* e, const __m512i* v, const BlockScales& s) {
    for (int k = 0; k < 8; ++k) _mm512_store_si512(e + 64 * k, v[k]);
    store_panel_scales<D>(e + 8 * 64, s);
  }
};

// acc + vpdpbusd(v, the 4 activation codes at x broadcast to every lane),
// the broadcast folded into the instruction ({1to16}). From intrinsics GCC
// broadcasts each token's codes into a register once for all groups
// (vpbroadcastd): 32 more instructions a block of 2 groups x 4 tokens, and
// there the tile is bound by how many instructions the core issues, not
// by its vector ports (matmul_bench 8192 x 2048, 64 tokens, one thread:
// q8_0 6.1-6.3 -> 5.5-5.6 ms, q4_k 6.9-7.0 -> 6.3-6.5).
using AliasedWord = int32_t __attribute__((may_alias));
ZL_AVX512 __attribute__((always_inline)) inline __m512i dpbusd_x4(__m512i acc, __m512i v, const uint8_t* x) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(v), "m"(*reinterpret_cast<const AliasedWord*>(x)));
  return acc;
}

// Each half's integer dot of one block of 16 rows (v[0..3], v[4..7]) with
// one token's codes xq, the chains started at -bias * sum_h(q): the dots of
// the codes without their bias (exact).
template <int Bias>
ZL_AVX512 inline void half_dots(const __m512i* v, const uint8_t* xq, const int32_t* sum16, __m512i* c0,
                                __m512i* c1) {
  *c0 = _mm512_set1_epi32(-Bias * sum16[0]);
  *c1 = _mm512_set1_epi32(-Bias * sum16[1]);
  for (int k = 0; k < 4; ++k) {
    *c0 = dpbusd_x4(*c0, v[k], xq + 4 * k);
    *c1 = dpbusd_x4(*c1, v[k + 4], xq + 4 * k + 16);
  }
}

// One Q2_K (Q3_K) block of 16 rows (v: the codes 0..3; codes + 4) against
// one token's codes xq: each half's dot C_h = sum(code q), |C_h| <= 4 * 128
// * 16 (the chains start at -4 S_h for Q3_K), and sum S_h = sum(q), |S_h| <=
// 128 * 16, fit 16 bits, so one vpmaddwd with the halves' scale (min)
// pairs gives sum_h sc_h C_h (sum_h m_h S_h), exact; one conversion (Q2_K:
// two) and two float steps (three) a block, one on the accumulator.
template <DType D>
ZL_AVX512 inline __m512 pair_scaled_block(const __m512i* v, const BlockScales& s, const uint8_t* xq,
                                          const int32_t* sum16, __m512 dx, __m512 acc) {
  __m512i c0, c1;
  half_dots<D == DType::kQ3_K ? 4 : 0>(v, xq, sum16, &c0, &c1);
  // Each lane's C_0 in its low word, C_1 in its high one.
  const __m512i dots = _mm512_mask_mov_epi16(c0, 0xaaaaaaaa, _mm512_slli_epi32(c1, 16));
  const __m512i scaled = _mm512_madd_epi16(dots, _mm512_castps_si512(s.dw));
  __m512 f = _mm512_mul_ps(s.hi, _mm512_cvtepi32_ps(scaled));
  if constexpr (D == DType::kQ2_K) {
    const int32_t sums = static_cast<int32_t>(static_cast<uint16_t>(sum16[0]) | static_cast<uint32_t>(sum16[1]) << 16);
    const __m512i mins = _mm512_madd_epi16(_mm512_castps_si512(s.min), _mm512_set1_epi32(sums));
    f = _mm512_fnmadd_ps(s.min_hi, _mm512_cvtepi32_ps(mins), f);
  }
  return _mm512_fmadd_ps(f, dx, acc);
}

// One Q6_K block of 16 rows (v: codes + 32) against one token's codes xq:
// each half's integer dot, less 32 times the half's sum(q) (exact), scaled
// (Q3_K, Q2_K: pair_scaled_block).
template <DType D>
ZL_AVX512 inline __m512 half_scaled_block(const __m512i* v, const BlockScales& s, const uint8_t* xq,
                                          const int32_t* sum16, __m512 dx, __m512 acc) {
  if constexpr (D != DType::kQ6_K) return pair_scaled_block<D>(v, s, xq, sum16, dx, acc);
  __m512i d0, d1;
  half_dots<32>(v, xq, sum16, &d0, &d1);
  acc = _mm512_fmadd_ps(s.dw, _mm512_mul_ps(_mm512_cvtepi32_ps(d0), dx), acc);
  return _mm512_fmadd_ps(s.hi, _mm512_mul_ps(_mm512_cvtepi32_ps(d1), dx), acc);
}

// The activation terms a block's float step subtracts, [num_tokens, cols /
// 32]: 128 * xds (MatmulInput::xds128) where the codes carry the offset 128
// (u = code + 128), xds itself where the format has a min (Q4_K, Q5_K,
// Q5_1). Exact either way (a power of 2).
template <DType D>
constexpr bool kMinTerm = D == DType::kQ4_K || D == DType::kQ5_K || D == DType::kQ5_1;
template <DType D>
inline const float* block_corrections(const MatmulInput& in) {
  return kMinTerm<D> ? in.xds : in.xds128;
}

// One block's float step for the formats scaled per block of 32: acc +=
// the block's contribution, from its exact integer dot D_i (as float: exact
// below 2^24), the activation's scale dx and xc from block_corrections,
// broadcast. The VNNI and AMX kernels both run it, so an output's bits do
// not depend on which did.
template <DType D>
ZL_AVX512 inline __m512 block_step(const BlockScales& s, __m512 dot, __m512 dx, __m512 xc, __m512 acc) {
  if constexpr (kMinTerm<D>) {
    const __m512 scaled = _mm512_fmadd_ps(s.dw, _mm512_mul_ps(dot, dx), acc);
    return _mm512_fnmadd_ps(s.min, xc, scaled);
  } else {
    const __m512 f = _mm512_fmsub_ps(dot, dx, xc);
    return D == DType::kI8 ? _mm512_add_ps(acc, f) : _mm512_fmadd_ps(s.dw, f, acc);
  }
}

// acc + one block of 16 rows (codes v, scales s) against one token's codes
// xq: the tiles' whole work per block, group and token. dx: the token's
// block scale; xc: its correction (block_corrections); sum16: its half-block
// sums (the half-scale formats; else unused).
template <DType D>
ZL_AVX512 __attribute__((always_inline)) inline __m512 token_block(const __m512i* v, const BlockScales& s,
                                                                   const uint8_t* xq, const int32_t* sum16,
                                                                   __m512 dx, __m512 xc, __m512 acc) {
  if constexpr (kHalfScales<D>) {
    return half_scaled_block<D>(v, s, xq, sum16, dx, acc);
  } else {
    // Two integer chains (exact: the order of integer sums does not matter).
    __m512i d0 = _mm512_setzero_si512(), d1 = _mm512_setzero_si512();
    for (int k = 0; k < 8; k += 2) {
      d0 = dpbusd_x4(d0, v[k], xq + 4 * k);
      d1 = dpbusd_x4(d1, v[k + 1], xq + 4 * k + 4);
    }
    return block_step<D>(s, _mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), dx, xc, acc);
  }
}

// Where group rg's outputs go (the rows in [row_lo, row_end) of y) and what
// they are multiplied by there: I8's row scales, else 1. stream: each
// token's 16 outputs are one whole cache line, written past the caches
// (streams_outputs, matmul_kernels.h).
struct GroupStore {
  __mmask16 mask;
  __m512 row_scale;
  float* out;  // y + rg: token t's outputs at out + t * ldy
  int64_t ldy;
  bool stream;
  // acc by value: through a pointer GCC kept a 2 x 4 tile's accumulators
  // in memory too, storing all 8 every block.
  ZL_AVX512 void store(int64_t t, __m512 acc) const {
    if (stream) {
      _mm512_stream_ps(out + t * ldy, _mm512_mul_ps(acc, row_scale));
    } else {
      _mm512_mask_storeu_ps(out + t * ldy, mask, _mm512_mul_ps(acc, row_scale));
    }
  }
};
// stream: the caller's streams_outputs(y, ldy); a group cut by the tile's
// edges is stored in part, through the caches.
template <DType D>
ZL_AVX512 inline GroupStore group_store(const WeightMatrix& w, int64_t rg, int64_t row_lo, int64_t row_end, float* y,
                                        int64_t ldy, bool stream = false) {
  const __mmask16 m = group_store_mask(rg, row_lo, row_end);
  const __m512 row_scale = D == DType::kI8 ? _mm512_maskz_loadu_ps(m, w.scales + rg) : _mm512_set1_ps(1.0f);
  return GroupStore{m, row_scale, y + rg, ldy, stream && m == 0xffff};
}

// From this many tokens on, rows are transposed (stored matrices) or unpacked
// (packed ones) once into a panel of 32 rows (kPanelEntry bytes per 16 rows
// and block) that every token tile reads: the same codes and scales as the
// tiles would read themselves, so the same results.
constexpr int64_t kPanelMinTokens = 8;
constexpr int64_t kPanelRows = 2 * kGroup;

// Every block of one group of 16 rows (src: StoredRows or PackedRows) into
// its panel entries, as the tiles would read it.
template <DType D, class Src>
ZL_AVX512 void fill_panel_group(const Src& src, int64_t num_blocks, uint8_t* entries) {
  for (int64_t b = 0; b < num_blocks; ++b) {
    __m512i v[8];
    BlockScales s{_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    src.template block<kPanelMinTokens>(b, v, &s);
    PanelRows<D>::store(entries + b * kPanelEntry<D>, v, s);
  }
}

// Every block's scales of one packed group into its scale panel entries
// ([num_blocks, kScaleEntry]).
template <DType D>
ZL_AVX512 void fill_scale_panel_group(const PackedRows<D>& src, int64_t num_blocks, uint8_t* entries) {
  for (int64_t b = 0; b < num_blocks; ++b) {
    BlockScales s{_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    src.block_scales(b, &s);
    store_panel_scales<D>(entries + b * kScaleEntry<D>, s);
  }
}

// Formats whose packed codes unpack in two instructions a vector (Q4_0's and
// Q4_K's nibbles: a shift and a mask): their strips' panels hold the rows'
// scales alone, and every token tile reads the codes as packed: a token
// tile reads 320 (Q4_K: 384) bytes a block and group instead of the full
// entry's 576 (640), and the strip's fill writes no codes (2048 x 2048 from
// memory, one thread on the EPYC VM, full panel -> scale panel, ms: 32
// tokens q4_0 0.835 -> 0.790, q4_k 0.925 -> 0.880; 64 tokens q4_k 1.77 ->
// 1.73; 512 tokens q4_k 14.6 -> 14.1). The other formats' codes take 3-5
// instructions a vector, and the full panel is the faster for them (scale
// panel -> full panel, 32 tokens: q5_k 1.07 -> 0.93, iq4_nl 0.87 -> 0.84).
template <DType D>
constexpr bool kScalePanel = D == DType::kQ4_0 || D == DType::kQ4_K;

// The bytes per block a strip's panel keeps for each group ([groups,
// num_blocks, entry]): the scales alone for a packed kScalePanel matrix
// (ScalePanelRows), else codes and scales (PanelRows).
template <DType D>
constexpr int64_t panel_entry_bytes(bool packed) {
  return packed && kScalePanel<D> ? kScaleEntry<D> : kPanelEntry<D>;
}

// This thread's panel of kPanelRows rows of num_blocks blocks, 64-byte aligned.
inline uint8_t* panel_storage(int64_t num_blocks) {
  thread_local std::vector<uint8_t> storage;  // sized for the largest entry, Q2_K's
  storage.resize(static_cast<size_t>(kPanelRows / kGroup * num_blocks * kPanelEntry<DType::kQ2_K> + 64));
  return storage.data() + (-reinterpret_cast<uintptr_t>(storage.data()) & 63);
}

// Formats the AMX tiles run: those whose blocks end in block_step (one
// integer dot per block of 32), packed. Q8_0's and I8's packed codes are
// the weight tiles as stored; the others' are unpacked once per group of 16
// rows into a panel (fill_panel_group, the codes and scales the VNNI tiles
// read), which every token tile then reads. (Unpacking per block and token
// tile instead cost more than the tiles saved: Q4_0 and Q4_K prefill-512
// on dummy:llama-1b went 282 -> 239 and 284 -> 226 tokens/s on the Xeon VM.)
template <DType D>
constexpr bool kAmxDirect = D == DType::kQ8_0 || D == DType::kI8;
template <DType D>
constexpr bool kAmxForm = !kHalfScales<D>;

// Tokens per AMX tile ([16 tokens, 32 codes] of int8 activations).
constexpr int kAmxTokens = kTileTokens;

// Whether the tokens go to the AMX tiles: a packed matrix of their forms,
// on a CPU that has them, for a whole tile of 16 or more (then the rest
// too, in a part tile: the codes or the panel are at hand), or of 8 or more
// tokens of Q8_0 and I8 (the others' panel costs more than 8 tokens of
// VNNI dots: q4_0 dummy:llama-1b, 8 tokens a step, 140 -> 117 tokens/s on
// the Xeon VM, while q8_0 went 97 -> 110).
constexpr int kAmxPartMinTokens = 8;

template <DType D>
inline bool use_amx(const WeightMatrix& w, const MatmulInput& in) {
  if constexpr (kAmxForm<D>) {
    const int64_t min_tokens = kAmxDirect<D> ? kAmxPartMinTokens : kAmxTokens;
    return w.packed != nullptr && in.num_tokens >= min_tokens && in.xtiles != nullptr;
  }
  return false;
}

// Rows [row_begin, row_end) of a packed matrix of kAmxForm x tokens [0,
// 16 full + part) (part < 16) on the AMX tiles (Sapphire Rapids on). Every
// token tile runs on a group before the next group, so the codes come from
// memory once (q8_0 dummy:llama-1b, 64 tokens a step: 254-259 -> 293-320
// tokens/s with the read-ahead, on the Xeon VM).
template <DType D>
ZL_AMX void amx_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                       int64_t full, int part, float* y, int64_t ldy);

}  // namespace zl::cpu::quant_avx512
