// AVX-512 VNNI tile kernels for the quantized formats (Q8_0, Q4_0, I8, and
// packed Q5_0, Q5_1, IQ4_NL and the super-block formats),
// row-interleaved: each vector lane belongs to one of 16 weight rows, so a
// block's scale multiplies 16 rows at once and no horizontal sum is needed.
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
//   Q3_K: u = 8 * (code + 4), the same with (d * (sc_h - 32) / 8)
//   Q2_K: u = 8 * code + 32, the same with d * sc_h / 8, less dmin * m_h * d_x * sum_h(q)
// (the integer corrections exact). They, Q5_0, Q5_1 and IQ4_NL are read packed
// only (the loader packs every matrix on AVX-512); an unpacked one goes to
// the AVX2 kernels, which read the stored blocks.
// Rows come from the packed layout of matmul.h when the matrix has one (v[k]
// as stored there: one sequential stream, nothing to transpose), otherwise
// straight from the stored blocks, transposed in registers (decode: each
// byte is read once), or from a panel of 32 rows transposed once and read by
// every token tile (prefill). All give the same v[k] and scales and run the
// same instructions per output, so a row's result does not depend on the
// batch, the tile, the thread split or whether the matrix is packed.
#include "kernels/cpu/immintrin_quiet.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

namespace zl::cpu {
namespace {

constexpr int kGroup = 16;  // rows per vector
static_assert(kGroup == kPackRows);

// A block's weight scales per lane: dw (k-quants: of the first half block),
// hi (Q6_K, Q3_K, Q2_K: of the second half), min (Q4_K, Q5_K, Q5_1; Q2_K: of
// the first half), min_hi (Q2_K: of the second half).
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
    } else if constexpr (D == DType::kQ3_K || D == DType::kQ2_K) {
      // u = 8 * (code + 4) (Q3_K) or 8 * code + 32 (Q2_K), 0..63 as Q6_K's:
      // bits 0, 1 of code 4k + j from bits 8j + 2q, + 1 of vector k / 4 (q = k %
      // 4) to bits 3, 4; Q3_K's bit 2 from bit 8j + k of vector 2 to bit 5.
      const __m512i mid = _mm512_set1_epi8(0x18), top = _mm512_set1_epi8(0x20);
      for (int c = 0; c < 2; ++c) {
        const __m512i h = _mm512_load_si512(e + 64 * c);
        const __m512i at[4] = {_mm512_slli_epi32(h, 3), _mm512_slli_epi32(h, 1), _mm512_srli_epi32(h, 1),
                               _mm512_srli_epi32(h, 3)};
        for (int q = 0; q < 4; ++q)  // at[q] & mid | top
          v[4 * c + q] = _mm512_ternarylogic_epi32(at[q], mid, top, 0xea);
      }
      if constexpr (D == DType::kQ3_K) {
        const __m512i high = _mm512_load_si512(e + 2 * 64);
        for (int k = 0; k < 8; ++k) {  // bit 5 of v[k]: its top bit when the code's bit 2 is clear
          const __m512i bit = k <= 5 ? _mm512_sll_epi32(high, _mm_cvtsi32_si128(5 - k))
                                     : _mm512_srl_epi32(high, _mm_cvtsi32_si128(k - 5));
          v[k] = _mm512_ternarylogic_epi32(v[k], bit, top, 0xd8);  // top ? bit : v
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
    block_scales(b, s);
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
      // Each half's stored byte: scale in the low nibble, min in the high one; u = 8 * code + 32.
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e + 32)));
      const __m512 d8 = _mm512_mul_ps(d, _mm512_set1_ps(1.0f / 8.0f));
      const __m512i lo = _mm512_cvtepu8_epi32(bytes(64 + 32 * j)), hi = _mm512_cvtepu8_epi32(bytes(80 + 32 * j));
      const __m512i low4 = _mm512_set1_epi32(15);
      s->dw = _mm512_mul_ps(d8, _mm512_cvtepi32_ps(_mm512_and_si512(lo, low4)));
      s->hi = _mm512_mul_ps(d8, _mm512_cvtepi32_ps(_mm512_and_si512(hi, low4)));
      s->min = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(lo, 4)));
      s->min_hi = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(hi, 4)));
    } else {  // Q6_K; Q3_K with u = 8 * (code + 4)
      const __m512 scale = D == DType::kQ3_K ? _mm512_mul_ps(d, _mm512_set1_ps(1.0f / 8.0f)) : d;
      s->dw = _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes(32 + 32 * j))));
      s->hi = _mm512_mul_ps(scale, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes(48 + 32 * j))));
    }
  }
};

// A panel entry per block: v[0..7] then the scales dw, hi, min, min_hi,
// 12 x 64 bytes (those the format's math reads).
constexpr int64_t kPanelEntry = 12 * 64;
template <DType D>
constexpr bool kHalfScales = D == DType::kQ6_K || D == DType::kQ3_K || D == DType::kQ2_K;
template <DType D>
constexpr bool kMins = D == DType::kQ4_K || D == DType::kQ5_K || D == DType::kQ5_1 || D == DType::kQ2_K;

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
  const uint8_t* tile(int64_t b) const { return blocks + b * kPanelEntry; }
  ZL_AVX512 void block_scales(int64_t b, BlockScales* s) const {
    const uint8_t* e = tile(b);
    s->dw = _mm512_load_ps(e + 8 * 64);
    if constexpr (kHalfScales<D>) s->hi = _mm512_load_ps(e + 9 * 64);
    if constexpr (kMins<D>) s->min = _mm512_load_ps(e + 10 * 64);
    if constexpr (D == DType::kQ2_K) s->min_hi = _mm512_load_ps(e + 11 * 64);
  }
  // Entry e as block() reads it back.
  static ZL_AVX512 void store(uint8_t* e, const __m512i* v, const BlockScales& s) {
    for (int k = 0; k < 8; ++k) _mm512_store_si512(e + 64 * k, v[k]);
    _mm512_store_ps(e + 8 * 64, s.dw);
    if constexpr (kHalfScales<D>) _mm512_store_ps(e + 9 * 64, s.hi);
    if constexpr (kMins<D>) _mm512_store_ps(e + 10 * 64, s.min);
    if constexpr (D == DType::kQ2_K) _mm512_store_ps(e + 11 * 64, s.min_hi);
  }
};

// One Q6_K block of 16 rows (v: codes + 32; Q3_K, Q2_K: 8 codes + 32)
// against one token's codes xq: each half's integer dot, less 32 times the
// half's sum(q) (exact), scaled; Q2_K's half mins times d_x * sum(q) off.
template <DType D>
ZL_AVX512 inline __m512 half_scaled_block(const __m512i* v, const BlockScales& s, const uint8_t* xq,
                                          const int32_t* sum16, __m512 dx, __m512 acc) {
  __m512i d0 = _mm512_set1_epi32(-32 * sum16[0]), d1 = _mm512_set1_epi32(-32 * sum16[1]);
  for (int k = 0; k < 4; ++k) {
    int32_t x0, x1;
    std::memcpy(&x0, xq + 4 * k, 4);
    std::memcpy(&x1, xq + 4 * k + 16, 4);
    d0 = _mm512_dpbusd_epi32(d0, v[k], _mm512_set1_epi32(x0));
    d1 = _mm512_dpbusd_epi32(d1, v[k + 4], _mm512_set1_epi32(x1));
  }
  acc = _mm512_fmadd_ps(s.dw, _mm512_mul_ps(_mm512_cvtepi32_ps(d0), dx), acc);
  acc = _mm512_fmadd_ps(s.hi, _mm512_mul_ps(_mm512_cvtepi32_ps(d1), dx), acc);
  if constexpr (D == DType::kQ2_K) {
    acc = _mm512_fnmadd_ps(s.min, _mm512_mul_ps(dx, _mm512_set1_ps(static_cast<float>(sum16[0]))), acc);
    acc = _mm512_fnmadd_ps(s.min_hi, _mm512_mul_ps(dx, _mm512_set1_ps(static_cast<float>(sum16[1]))), acc);
  }
  return acc;
}

// The activation term a block's float step subtracts: 128 * xds where the
// codes carry the offset 128 (u = code + 128), xds itself where the format
// has a min (Q4_K, Q5_K, Q5_1). Exact either way (a power of 2).
template <DType D>
constexpr bool kMinTerm = D == DType::kQ4_K || D == DType::kQ5_K || D == DType::kQ5_1;
template <DType D>
inline float block_correction(float xds) {
  return kMinTerm<D> ? xds : 128.0f * xds;
}

// One block's float step for the formats scaled per block of 32: acc +=
// the block's contribution, from its exact integer dot D_i (as float: exact
// below 2^24), the activation's scale dx and xc = block_correction(xds),
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

// Stores the accumulators of group rg (16 rows) for tokens t0.. t0+T-1 into
// y, the rows in [row_lo, row_end) only; I8 multiplies its row scales here.
template <DType D>
ZL_AVX512 inline void store_group(const __m512* acc, int T, const WeightMatrix& w, int64_t rg, int64_t row_lo,
                                  int64_t row_end, int64_t t0, float* y, int64_t ldy) {
  const __mmask16 m = group_store_mask(rg, row_lo, row_end);
  const __m512 row_scale = D == DType::kI8 ? _mm512_maskz_loadu_ps(m, w.scales + rg) : _mm512_set1_ps(1.0f);
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy + rg, m, _mm512_mul_ps(acc[t], row_scale));
}

// A strip's read-ahead of the next strip's packed codes and scales
// (ReadAhead), stepped once per block by micro(): each of the strip's
// token tiles reads 1 / (token tiles) of them.
struct StripAhead {
  ReadAhead codes, scales;
  int64_t code_bytes = 0, scale_bytes = 0;  // a strip's per block
  ZL_AVX512 void step() {
    codes.step(code_bytes);
    scales.step(scale_bytes);
  }
};

// G groups of 16 rows (src[g]) from row r0 on x tokens t0.. t0+T-1; rows
// outside [row_lo, row_end) are computed but not stored.
template <DType D, int G, int T, class Src>
ZL_AVX512 void micro(const Src* src, const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t row_lo,
                     int64_t row_end, int64_t t0, float* y, int64_t ldy, StripAhead* ahead) {
  const int64_t n = in.cols, num_blocks = n / 32;
  __m512 acc[G][T];
  for (int g = 0; g < G; ++g)
    for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    if (ahead != nullptr) ahead->step();
    __m512i v[G][8];
    BlockScales s[G];
    for (int g = 0; g < G; ++g) src[g].template block<T>(b, v[g], &s[g]);
    for (int t = 0; t < T; ++t) {
      const int64_t tok = t0 + t;
      const uint8_t* xq = reinterpret_cast<const uint8_t*>(in.xq + tok * n + b * 32);
      const __m512 dx = _mm512_set1_ps(in.xd[tok * num_blocks + b]);
      const float xds = in.xds[tok * num_blocks + b];
      for (int g = 0; g < G; ++g) {
        if constexpr (D == DType::kQ6_K || D == DType::kQ3_K || D == DType::kQ2_K) {
          const int32_t* sum16 = in.xsum16 + (tok * num_blocks + b) * 2;
          acc[g][t] = half_scaled_block<D>(v[g], s[g], xq, sum16, dx, acc[g][t]);
          continue;
        }
        // Two integer chains (exact: the order of integer sums does not matter).
        __m512i d0 = _mm512_setzero_si512(), d1 = _mm512_setzero_si512();
        for (int k = 0; k < 8; k += 2) {
          int32_t x0, x1;
          std::memcpy(&x0, xq + 4 * k, 4);
          std::memcpy(&x1, xq + 4 * k + 4, 4);
          d0 = _mm512_dpbusd_epi32(d0, v[g][k], _mm512_set1_epi32(x0));
          d1 = _mm512_dpbusd_epi32(d1, v[g][k + 1], _mm512_set1_epi32(x1));
        }
        const __m512 dot = _mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1));
        acc[g][t] = block_step<D>(s[g], dot, dx, _mm512_set1_ps(block_correction<D>(xds)), acc[g][t]);
      }
    }
  }
  for (int g = 0; g < G; ++g) store_group<D>(acc[g], T, w, r0 + g * kGroup, row_lo, row_end, t0, y, ldy);
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
    PanelRows<D>::store(entries + b * kPanelEntry, v, s);
  }
}

// This thread's panel of kPanelRows rows of num_blocks blocks, 64-byte aligned.
uint8_t* panel_storage(int64_t num_blocks) {
  thread_local std::vector<uint8_t> storage;
  storage.resize(static_cast<size_t>(kPanelRows / kGroup * num_blocks * kPanelEntry + 64));
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

#define ZL_AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

// Tiles of the AMX kernel: dots C0..C3 ([16 tokens, 16 rows] int32), two
// activation tiles A ([16 tokens, 32 codes]) and two weight tiles B ([8
// quads, 16 rows x 4 codes], the VNNI layout of v[k]), used in turn. A
// batch's last tokens, fewer than 16, run as a whole tile too: the rows of
// xq past the batch are readable (MatmulInput), their dots unused.
constexpr int kAmxTokens = kTileTokens;
constexpr int kAmxChunk = 4;  // blocks per round of tile products

ZL_AMX inline void amx_configure() {
  AmxTileConfig cfg;
  for (int c = 0; c < kAmxChunk; ++c) {
    cfg.rows[c] = kAmxTokens;
    cfg.colsb[c] = 64;
  }
  for (int a : {4, 5}) {
    cfg.rows[a] = kAmxTokens;
    cfg.colsb[a] = 32;
  }
  for (int b : {6, 7}) {
    cfg.rows[b] = 8;
    cfg.colsb[b] = 64;
  }
  amx_load_config(cfg);
}

// dots[16][16] = the 16 tokens' codes at x (row stride) times one block's
// weights (8 x 64 bytes) in tile C, through tiles A and B. A macro: GCC's
// tile intrinsics paste their tile numbers into the asm text as written.
#define ZL_AMX_BLOCK_DOT(C, A, B, x, stride, weights) \
  do {                                               \
    _tile_zero(C);                                   \
    _tile_loadd(A, x, stride);                       \
    _tile_loadd(B, weights, 64);                     \
    _tile_dpbsud(C, A, B);                           \
  } while (0)

// The tile products of blocks [4 chunk, 4 chunk + 4) (those below
// num_blocks) of the group src (PackedRows or PanelRows), for the 16 tokens
// whose codes start at x: tile C j = [16 tokens, 16 rows] of block 4 chunk + j.
template <class Src>
ZL_AMX inline void amx_chunk_products(const Src& src, const int8_t* x, int64_t n, int64_t num_blocks,
                                      int64_t chunk) {
  const int64_t b = chunk * kAmxChunk;
  ZL_AMX_BLOCK_DOT(0, 4, 6, x + b * 32, n, src.tile(b));
  if (b + 1 < num_blocks) ZL_AMX_BLOCK_DOT(1, 5, 7, x + (b + 1) * 32, n, src.tile(b + 1));
  if (b + 2 < num_blocks) ZL_AMX_BLOCK_DOT(2, 4, 6, x + (b + 2) * 32, n, src.tile(b + 2));
  if (b + 3 < num_blocks) ZL_AMX_BLOCK_DOT(3, 5, 7, x + (b + 3) * 32, n, src.tile(b + 3));
}

// Tiles C 0..3 (those of blocks below num_blocks) to dots[0..3].
ZL_AMX inline void amx_chunk_store(int64_t num_blocks, int64_t chunk, int32_t (*dots)[kAmxTokens][kGroup]) {
  const int64_t b = chunk * kAmxChunk;
  _tile_stored(0, dots[0], 64);
  if (b + 1 < num_blocks) _tile_stored(1, dots[1], 64);
  if (b + 2 < num_blocks) _tile_stored(2, dots[2], 64);
  if (b + 3 < num_blocks) _tile_stored(3, dots[3], 64);
  amx_stores_done();
}

// The tile loads of the weights do not train the hardware prefetchers: a
// decode step, which reads each weight once, waited on memory in tdpbsud
// (half of the AMX kernel's samples), so the kernel reads ahead itself. When
// the tiles read the packed codes with one token tile, into L1 a few chunks
// ahead; otherwise (several token tiles, or a panel), the next group's
// packed codes go to L2 spread over the current group's passes, and the
// memory stream never pauses. The groups' codes are one sequential stream:
// reading ahead may cross into the next group, or past the matrix
// (prefetches do not fault).
constexpr int64_t kAmxPrefetchChunks = 2;

struct AmxReadAhead {
  const uint8_t* at;  // where the next prefetch starts
  int64_t bytes;      // bytes per chunk
  bool l1;            // the group's own codes into L1 (at: the group), or the next group's into L2
};

template <decltype(_MM_HINT_T0) Hint>  // GCC: enum _mm_hint; clang: int
ZL_AMX inline void amx_prefetch(const uint8_t* codes, int64_t bytes) {
  for (int64_t at = 0; at < bytes; at += 64) _mm_prefetch(reinterpret_cast<const char*>(codes + at), Hint);
}

// One group of 16 rows from rg (src: its packed codes or its panel) x
// tokens [t_begin, t_begin + m num_tiles) on the AMX tiles (Part: one tile
// of m < 16 tokens, whose float steps stop at m): each block's weight tile
// (micro()'s v[k]) times 16 tokens' int8 codes in one tdpbsud give every
// token's integer dots D_i, the integers vpdpbusd gives; then block_step
// per token and block in order, as micro(). Same bits. The tile products of
// the next 4 blocks are issued before the float steps of the last 4 and
// stored after them, so that the two units overlap. src by value: its
// pointers stay in registers (behind a reference, every store to y might
// change them).
template <DType D, bool Part, class Src>
ZL_AMX void amx_group(const Src src, const WeightMatrix& w, const MatmulInput& in, int64_t rg, int64_t row_begin,
                      int64_t row_end, int64_t t_begin, int64_t num_tiles, int m, AmxReadAhead* ahead, float* y,
                      int64_t ldy) {
  const int64_t n = in.cols, num_blocks = n / 32, num_chunks = (num_blocks + kAmxChunk - 1) / kAmxChunk;
  alignas(64) int32_t dots[kAmxChunk][kAmxTokens][kGroup];
  for (int64_t t0 = t_begin; t0 < t_begin + num_tiles * m; t0 += m) {
    const int8_t* x = in.xq + t0 * n;
    __m512 acc[kAmxTokens];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    amx_chunk_products(src, x, n, num_blocks, 0);
    amx_chunk_store(num_blocks, 0, dots);
    for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
      if (ahead->l1) {
        amx_prefetch<_MM_HINT_T0>(ahead->at + (chunk + kAmxPrefetchChunks) * ahead->bytes, ahead->bytes);
      } else {
        amx_prefetch<_MM_HINT_T1>(ahead->at, ahead->bytes);
        ahead->at += ahead->bytes;
      }
      const bool next = chunk + 1 < num_chunks;
      if (next) amx_chunk_products(src, x, n, num_blocks, chunk + 1);
      for (int j = 0; j < kAmxChunk && chunk * kAmxChunk + j < num_blocks; ++j) {
        const int64_t b = chunk * kAmxChunk + j;
        BlockScales s;
        src.block_scales(b, &s);
        // xtiles: dx, then xds or 128 xds as block_correction has it.
        const float* xs = in.xtiles + (t0 / kAmxTokens * num_blocks + b) * 3 * kAmxTokens;
        const float* xc = xs + (kMinTerm<D> ? 1 : 2) * kAmxTokens;
        for (int t = 0; t < kAmxTokens && (!Part || t < m); ++t) {
          const __m512 dot = _mm512_cvtepi32_ps(_mm512_load_si512(dots[j][t]));
          acc[t] = block_step<D>(s, dot, _mm512_set1_ps(xs[t]), _mm512_set1_ps(xc[t]), acc[t]);
        }
      }
      if (next) amx_chunk_store(num_blocks, chunk + 1, dots);
    }
    store_group<D>(acc, m, w, rg, row_begin, row_end, t0, y, ldy);
  }
}

// Rows [row_begin, row_end) of a packed matrix of kAmxForm x tokens [0,
// 16 full + part) (part < 16) on the AMX tiles (Sapphire Rapids on). Every
// token tile runs on a group before the next group, so the codes come from
// memory once (q8_0 dummy:llama-1b, 64 tokens a step: 254-259 -> 293-320
// tokens/s with the read-ahead, on the Xeon VM).
template <DType D>
ZL_AMX void amx_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                       int64_t full, int part, float* y, int64_t ldy) {
  const int64_t num_blocks = in.cols / 32, num_chunks = (num_blocks + kAmxChunk - 1) / kAmxChunk;
  const int64_t group_bytes = num_blocks * packed_code_bytes(D), passes = full + (part > 0);
  // The bytes of the next group to read ahead per chunk and pass.
  const int64_t step = (group_bytes / (passes * num_chunks) + 63) / 64 * 64;
  uint8_t* panel = kAmxDirect<D> ? nullptr : panel_storage(num_blocks);
  amx_configure();
  for (int64_t rg = row_begin / kGroup * kGroup; rg < row_end; rg += kGroup) {
    PackedRows<D> packed;
    packed.at_group(w, rg / kGroup);
    AmxReadAhead ahead{packed.codes + group_bytes, step, false};
    if (kAmxDirect<D> && passes == 1) ahead = AmxReadAhead{packed.codes, kAmxChunk * packed_code_bytes(D), true};
    auto run = [&](auto src) {
      if (full > 0) amx_group<D, false>(src, w, in, rg, row_begin, row_end, 0, full, kAmxTokens, &ahead, y, ldy);
      if (part > 0) amx_group<D, true>(src, w, in, rg, row_begin, row_end, kAmxTokens * full, 1, part, &ahead, y, ldy);
    };
    if constexpr (kAmxDirect<D>) {
      run(packed);
    } else {
      fill_panel_group<D>(packed, num_blocks, panel);
      run(PanelRows<D>{panel});
    }
  }
  _tile_release();
}

// Rows [row_begin, row_end) x tokens t0.. t0+T-1; panel: nullptr, or the
// rows' blocks from the first computed row on ([groups, num_blocks,
// kPanelEntry]): row_begin, or for a packed matrix the start of its group;
// ahead: nullptr, or the next strip's read-ahead (strip_tiles).
template <DType D, int T>
ZL_AVX512 void rows_for_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               int64_t t0, float* y, int64_t ldy, const uint8_t* panel, StripAhead* ahead) {
  const int64_t entry_bytes = in.cols / 32 * kPanelEntry;
  // Packed groups start at multiples of 16 rows; the rows before row_begin
  // in the first one are not stored.
  const int64_t first = w.packed != nullptr ? row_begin / kGroup * kGroup : row_begin;
  auto run = [&]<int G>(int64_t r0) {
    if (panel != nullptr) {
      PanelRows<D> src[G];
      for (int g = 0; g < G; ++g) src[g].blocks = panel + ((r0 - first) / kGroup + g) * entry_bytes;
      micro<D, G, T>(src, w, in, r0, row_begin, row_end, t0, y, ldy, ahead);
    } else if (w.packed != nullptr) {
      PackedRows<D> src[G];
      for (int g = 0; g < G; ++g) src[g].at_group(w, r0 / kGroup + g);
      micro<D, G, T>(src, w, in, r0, row_begin, row_end, t0, y, ldy, ahead);
    } else if constexpr (D == DType::kQ8_0 || D == DType::kQ4_0 || D == DType::kI8) {  // the others: packed only
      if constexpr (G == 2) {
        const StoredRows<D> src[2] = {StoredRows<D>(w, r0, row_end), StoredRows<D>(w, r0 + kGroup, row_end)};
        micro<D, G, T>(src, w, in, r0, r0, row_end, t0, y, ldy, ahead);
      } else {
        const StoredRows<D> src[1] = {StoredRows<D>(w, r0, row_end)};
        micro<D, G, T>(src, w, in, r0, r0, row_end, t0, y, ldy, ahead);
      }
    }
  };
  int64_t r = first;
  // Two groups share each token's codes in prefill; decoding keeps to one
  // group, as 32 concurrent row streams outrun the hardware prefetchers
  // (16 streams read ~1.5x faster here).
  if constexpr (T >= 4)
    for (; r + 2 * kGroup <= row_end; r += 2 * kGroup) run.template operator()<2>(r);
  for (; r < row_end; r += kGroup) run.template operator()<1>(r);
}

// Whether the tokens go to the AMX tiles: a packed matrix of their forms,
// on a CPU that has them, for a whole tile of 16 or more (then the rest
// too, in a part tile: the codes or the panel are at hand), or of 8 or more
// tokens of Q8_0 and I8 (the others' panel costs more than 8 tokens of
// VNNI dots: q4_0 dummy:llama-1b, 8 tokens a step, 140 -> 117 tokens/s on
// the Xeon VM, while q8_0 went 97 -> 110).
constexpr int kAmxPartMinTokens = 8;

template <DType D>
bool use_amx(const WeightMatrix& w, const MatmulInput& in) {
  if constexpr (kAmxForm<D>) {
    const int64_t min_tokens = kAmxDirect<D> ? kAmxPartMinTokens : kAmxTokens;
    return w.packed != nullptr && in.num_tokens >= min_tokens && in.xtiles != nullptr;
  }
  return false;
}

template <DType D>
ZL_AVX512 void token_tiles(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                           float* y, int64_t ldy, const uint8_t* panel, StripAhead* ahead = nullptr) {
  if constexpr (kAmxForm<D>)
    if (panel == nullptr && use_amx<D>(w, in)) {
      amx_tokens<D>(w, in, row_begin, row_end, in.num_tokens / kAmxTokens,
                    static_cast<int>(in.num_tokens % kAmxTokens), y, ldy);
      return;
    }
  each_token_tile(in.num_tokens, [&]<int T>(int64_t t0) {
    rows_for_tokens<D, T>(w, in, row_begin, row_end, t0, y, ldy, panel, ahead);
  });
}

// A decode batch of 1-8 tokens on packed rows runs as one pass: every token
// on each group of 16 packed rows, the codes read kOnePassAhead blocks
// ahead in the one stream the groups make, so they come from memory once
// and the stream does not wait on the hardware prefetchers. (Strips of
// token tiles of 4 left the memory idle while the second tile ran from L2:
// q8_0 / q4_k at 8 tokens from memory ran at 0.65 / 0.37 of the weight
// read's rate, then 0.67-0.74 / 0.51-0.56; without the read-ahead, 1 token
// of q4_0 / q4_k streamed ~20 GB/s against q8_0's ~27: bench/results/roofline.)
constexpr int64_t kOnePassMaxTokens = 2 * kTokenTile;
constexpr int64_t kOnePassAhead = 16;

// Not where the AMX tiles take the batch (Q8_0 and I8 from 8 tokens).
template <DType D>
bool one_pass(const WeightMatrix& w, const MatmulInput& in) {
  return w.packed != nullptr && in.num_tokens <= kOnePassMaxTokens && !use_amx<D>(w, in);
}

template <DType D>
ZL_AVX512 void one_pass_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               float* y, int64_t ldy) {
  auto run = [&]<int T>() {
    for (int64_t rg = row_begin / kGroup * kGroup; rg < row_end; rg += kGroup) {
      PackedRows<D> src[1];
      src[0].at_group(w, rg / kGroup);
      StripAhead ahead;
      ahead.code_bytes = packed_code_bytes(D);
      ahead.codes = ReadAhead{src[0].codes + kOnePassAhead * packed_code_bytes(D)};
      micro<D, 1, T>(src, w, in, rg, row_begin, row_end, 0, y, ldy, &ahead);
    }
  };
  switch (in.num_tokens) {
    case 1: return run.template operator()<1>();
    case 2: return run.template operator()<2>();
    case 3: return run.template operator()<3>();
    case 4: return run.template operator()<4>();
    case 5: return run.template operator()<5>();
    case 6: return run.template operator()<6>();
    case 7: return run.template operator()<7>();
    default: return run.template operator()<8>();
  }
}

// Rows [row_begin, row_end) x all tokens, strip by strip of 32 rows (from
// the first computed row, as rows_for_tokens counts them): every token tile
// runs on a strip before the next. fill: each group of 16 rows is read
// once, as the tiles would read it (StoredRows or PackedRows), into a
// panel, which every token tile then reads. A decode batch of 9-64 tokens
// of packed rows reads the next strip ahead (ReadAhead; dummy:llama-1b on
// the Xeon VM without AMX, q8_0, 16 / 32 tokens a step: 152-154 -> 173-194 /
// 198 -> 232-234 tokens/s); fewer than 9 run as one pass (one_pass_tokens).
template <DType D>
ZL_AVX512 void strip_tiles(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                           float* y, int64_t ldy, bool fill) {
  const int64_t num_blocks = in.cols / 32;
  uint8_t* panel = fill ? panel_storage(num_blocks) : nullptr;
  const int64_t first = w.packed != nullptr ? row_begin / kGroup * kGroup : row_begin;
  const bool read_ahead = w.packed != nullptr && group_first(in.num_tokens);
  constexpr int64_t kStripGroups = kPanelRows / kGroup;
  for (int64_t r0 = first; r0 < row_end; r0 += kPanelRows) {
    const int64_t r1 = std::min(row_end, r0 + kPanelRows);
    for (int64_t g = 0; fill && r0 + g * kGroup < r1; ++g) {
      uint8_t* entries = panel + g * num_blocks * kPanelEntry;
      if (w.packed != nullptr) {
        PackedRows<D> src;
        src.at_group(w, r0 / kGroup + g);
        fill_panel_group<D>(src, num_blocks, entries);
      } else if constexpr (D == DType::kQ8_0 || D == DType::kQ4_0 || D == DType::kI8) {
        fill_panel_group<D>(StoredRows<D>(w, r0 + g * kGroup, r1), num_blocks, entries);
      }
    }
    StripAhead ahead;
    if (read_ahead) {
      PackedRows<D> next;
      next.at_group(w, r0 / kGroup + kStripGroups);
      ahead.code_bytes = kStripGroups * packed_code_bytes(D);
      ahead.codes = ReadAhead::over_tiles(next.codes, in.num_tokens);
      if constexpr (dtype_has_super_blocks(D)) {
        ahead.scale_bytes = kStripGroups * packed_kscale_bytes(D) / 8;
        ahead.scales = ReadAhead::over_tiles(next.kscales, in.num_tokens);
      } else if constexpr (D != DType::kI8) {
        ahead.scale_bytes = kStripGroups * PackedRows<D>::kScaleLanes * 2;
        ahead.scales = ReadAhead::over_tiles(reinterpret_cast<const uint8_t*>(next.scales), in.num_tokens);
      }
    }
    token_tiles<D>(w, in, std::max(row_begin, r0), r1, y, ldy, panel, read_ahead ? &ahead : nullptr);
  }
}

// Packed or stored Q8_0, Q4_0 and I8: the tiles read packed rows as they
// lie; stored ones through panels from kPanelMinTokens on.
template <DType D>
ZL_AVX512 void tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                    int64_t ldy) {
  const bool packed = w.packed != nullptr;
  if (one_pass<D>(w, in)) return one_pass_tokens<D>(w, in, row_begin, row_end, y, ldy);
  if (use_amx<D>(w, in) || (packed ? !group_first(in.num_tokens) : in.num_tokens < kPanelMinTokens))
    return token_tiles<D>(w, in, row_begin, row_end, y, ldy, nullptr);
  strip_tiles<D>(w, in, row_begin, row_end, y, ldy, /*fill=*/!packed);
}

// Formats read packed only (all but Q8_0, Q4_0 and I8).
template <DType D>
ZL_AVX512 void tile_packed(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                           float* y, int64_t ldy) {
  if (w.packed == nullptr) return tile_kernel_avx2(D)(w, in, row_begin, row_end, y, ldy);
  if (one_pass<D>(w, in)) return one_pass_tokens<D>(w, in, row_begin, row_end, y, ldy);
  if (use_amx<D>(w, in)) return token_tiles<D>(w, in, row_begin, row_end, y, ldy, nullptr);
  strip_tiles<D>(w, in, row_begin, row_end, y, ldy, /*fill=*/true);  // 9 tokens or more
}

}  // namespace

TileKernel tile_kernel_avx512_quant(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0: return tile<DType::kQ8_0>;
    case DType::kQ4_0: return tile<DType::kQ4_0>;
    case DType::kI8: return tile<DType::kI8>;
    case DType::kQ5_0: return tile_packed<DType::kQ5_0>;
    case DType::kQ5_1: return tile_packed<DType::kQ5_1>;
    case DType::kIQ4_NL: return tile_packed<DType::kIQ4_NL>;
    case DType::kQ4_K: return tile_packed<DType::kQ4_K>;
    case DType::kQ5_K: return tile_packed<DType::kQ5_K>;
    case DType::kQ3_K: return tile_packed<DType::kQ3_K>;
    case DType::kQ2_K: return tile_packed<DType::kQ2_K>;
    case DType::kQ6_K: return tile_packed<DType::kQ6_K>;
    case DType::kIQ4_XS: return tile_packed<DType::kIQ4_XS>;
    default: return nullptr;
  }
}

}  // namespace zl::cpu
