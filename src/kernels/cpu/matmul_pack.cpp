// Packing of bf16, f16 and quantized matrices into the interleaved layouts of matmul.h, done
// once at load. Plain scalar code: it runs once per weight, reads every byte
// through weight_block (the scalar reference's reading of the stored format),
// and its output is checked by the kernels' tests against that reference.
#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/cpu/matmul_kernels.h"

namespace zl::cpu {

int64_t packed_bytes(const WeightMatrix& w) {
  const int64_t groups = (w.rows + kPackRows - 1) / kPackRows;
  if (w.dtype == DType::kBF16) return groups * (w.cols + 1) / 2 * 64;
  if (w.dtype == DType::kF16) return groups * w.cols * 32;
  if (!dtype_is_quantized(w.dtype)) return 0;
  const int64_t blocks = w.cols / 32;
  if (dtype_has_super_blocks(w.dtype))
    return groups * (blocks * packed_code_bytes(w.dtype) + w.cols / 256 * packed_kscale_bytes(w.dtype));
  const int64_t scale_bytes = w.dtype == DType::kI8 ? 0 : w.dtype == DType::kQ5_1 ? kPackRows * 4 : kPackRows * 2;
  return groups * blocks * (packed_code_bytes(w.dtype) + scale_bytes);
}

namespace {

// bf16 (kUnit 4, panels of 1 group) and f16 (kUnit 2, panels of
// kF16PanelGroups): unit p of row r (bytes kUnit p.. of the stored row) to
// lane r % 16 of vector (p, group r / 16 within its panel) of that panel; a
// missing last bf16 column stays 0, as do padding rows. Each panel is written
// while its rows are read (its vectors stay in cache).
template <int64_t kUnit, int64_t kPanel>
void pack_lanes(const WeightMatrix& w, uint8_t* dst) {
  const int64_t row_bytes = w.row_bytes(), units = (row_bytes + kUnit - 1) / kUnit, full = row_bytes / kUnit;
  const int64_t groups = (w.rows + kPackRows - 1) / kPackRows, vector_bytes = kPackRows * kUnit;
  std::memset(dst, 0, static_cast<size_t>(packed_bytes(w)));
  for (int64_t r = 0; r < w.rows; ++r) {
    const int64_t g = r / kPackRows, panel = g / kPanel * kPanel;
    const int64_t step = std::min(kPanel, groups - panel) * vector_bytes;  // from unit p to p + 1
    uint8_t* lane = dst + panel * units * vector_bytes + (g - panel) * vector_bytes + kUnit * (r % kPackRows);
    const uint8_t* src = w.row(r);
    for (int64_t p = 0; p < full; ++p) std::memcpy(lane + p * step, src + kUnit * p, kUnit);
    if (full < units) std::memcpy(lane + full * step, src + kUnit * full, row_bytes - kUnit * full);
  }
}

// Bit `bit` of each of 32 biased codes u into one lane's word (v): bit 8j + k
// for code 4k + j.
void put_bit_plane(const int* u, int bit, uint8_t* v) {
  uint32_t word = 0;
  for (int e = 0; e < 32; ++e) word |= uint32_t((u[e] >> bit) & 1) << (8 * (e % 4) + e / 4);
  std::memcpy(v, &word, 4);
}

// Bits `bit`, + 1 of each of 32 biased codes u into one lane's word of two
// vectors (v, v + 64): bits 8j + 2q, + 1 of vector c for code 4 (4c + q) + j.
void put_pair_plane(const int* u, int bit, uint8_t* v) {
  uint32_t word[2] = {0, 0};
  for (int e = 0; e < 32; ++e) word[e / 16] |= uint32_t((u[e] >> bit) & 3) << (8 * (e % 4) + 2 * (e / 4 % 4));
  std::memcpy(v, &word[0], 4);
  std::memcpy(v + 64, &word[1], 4);
}

// A block's 32 codes into one lane's word of each packed vector (v: that
// lane's word in vector 0), as the kernels read them, each code plus a bias
// that makes it unsigned (Q4_0 8, Q5_0 16, Q6_K 32, Q3_K 4, Q8_0 / I8 128,
// the others 0; IQ4_NL and IQ4_XS: each grid value's index):
//   8-bit formats (Q8_0, I8): one code a byte, 8 vectors;
//   4-bit (Q4_0, Q4_K, IQ4): codes j and j + 16 in the low and high nibble
//   of byte j (j < 16), 4 vectors;
//   5-bit (Q5_0, Q5_1, Q5_K): the low 4 bits as 4-bit, then bit 4 (put_bit_plane);
//   Q6_K: the low 4 bits as 4-bit, then bits 4, 5 (put_pair_plane);
//   Q2_K: bits 0, 1 (put_pair_plane); Q3_K: the same, then bit 2.
void put_block_codes(DType dtype, const int8_t* codes, uint8_t* v) {
  const bool iq4 = dtype == DType::kIQ4_NL || dtype == DType::kIQ4_XS;
  const int bias = dtype == DType::kQ4_0                          ? 8
                   : dtype == DType::kQ5_0                        ? 16
                   : dtype == DType::kQ6_K                        ? 32
                   : dtype == DType::kQ3_K                        ? 4
                   : dtype == DType::kQ8_0 || dtype == DType::kI8 ? 128
                                                                  : 0;
  int u[32];
  for (int e = 0; e < 32; ++e)
    u[e] = iq4 ? static_cast<int>(std::find(kIq4Values, kIq4Values + 16, codes[e]) - kIq4Values) : codes[e] + bias;
  const int64_t vectors = packed_code_bytes(dtype) / 64;
  if (dtype == DType::kQ2_K || dtype == DType::kQ3_K) {
    put_pair_plane(u, 0, v);
    if (dtype == DType::kQ3_K) put_bit_plane(u, 2, v + 2 * 64);
    return;
  }
  if (vectors == 8) {
    for (int j = 0; j < 32; ++j) v[j / 4 * 64 + j % 4] = static_cast<uint8_t>(u[j]);
    return;
  }
  for (int j = 0; j < 16; ++j) v[j / 4 * 64 + j % 4] = static_cast<uint8_t>((u[j] & 0x0f) | (u[j + 16] & 0x0f) << 4);
  if (vectors == 5) put_bit_plane(u, 4, v + 4 * 64);
  if (dtype == DType::kQ6_K) put_pair_plane(u, 4, v + 4 * 64);
}

// Lane `lane` of super-block sb's scales (matmul.h): Q4_K / Q5_K d, dmin, then
// the blocks' scales and mins; Q6_K d, then the half blocks' scales; Q3_K
// d, then each block's two half blocks' scales less 32, side by side; Q2_K
// d, dmin, then each block's two half blocks' scale and min nibbles as
// stored, side by side; IQ4_XS d, then the blocks' scales less 32.
void pack_kscales(const WeightMatrix& w, const uint8_t* superblock, int64_t lane, uint8_t* e) {
  uint8_t sc[16], mins[16];
  uint16_t d_bits[2];
  kquant_scales(w.dtype, superblock, sc, mins, d_bits);
  std::memcpy(e + 2 * lane, &d_bits[0], 2);
  if (w.dtype == DType::kIQ4_XS) {
    for (int j = 0; j < 8; ++j) e[32 + 16 * j + lane] = static_cast<uint8_t>(sc[j] - 32);
  } else if (w.dtype == DType::kQ3_K) {
    for (int k = 0; k < 16; ++k) e[32 + 32 * (k / 2) + 2 * lane + k % 2] = static_cast<uint8_t>(sc[k] - 32);
  } else if (w.dtype == DType::kQ2_K) {
    std::memcpy(e + 32 + 2 * lane, &d_bits[1], 2);
    for (int k = 0; k < 16; ++k) e[64 + 32 * (k / 2) + 2 * lane + k % 2] = static_cast<uint8_t>(sc[k] | mins[k] << 4);
  } else if (w.dtype != DType::kQ6_K) {
    std::memcpy(e + 32 + 2 * lane, &d_bits[1], 2);
    for (int j = 0; j < 8; ++j) {
      e[64 + 16 * j + lane] = sc[j];
      e[192 + 16 * j + lane] = mins[j];
    }
  } else {
    for (int k = 0; k < 16; ++k) e[32 + 16 * k + lane] = sc[k];
  }
}

// Codes of each block as the kernels read them (Q4_K like Q4_0, Q5_K so plus
// its high bits, Q6_K like Q8_0 with codes + 32), scales per super-block.
void pack_kquant(const WeightMatrix& w, uint8_t* dst) {
  const int64_t groups = (w.rows + kPackRows - 1) / kPackRows, blocks = w.cols / 32, supers = w.cols / 256;
  const int64_t code_bytes = packed_code_bytes(w.dtype), kscale_bytes = packed_kscale_bytes(w.dtype);
  uint8_t* scales = dst + groups * blocks * code_bytes;  // [G, S, kscale_bytes]
  std::memset(dst, 0, static_cast<size_t>(packed_bytes(w)));
  int8_t codes[32];
  float unused_scale[2], unused_min[2];
  for (int64_t r = 0; r < w.rows; ++r) {
    const int64_t g = r / kPackRows, lane = r % kPackRows;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* superblock = w.row(r) + b / 8 * dtype_block_bytes(w.dtype);
      if (b % 8 == 0) pack_kscales(w, superblock, lane, scales + (g * supers + b / 8) * kscale_bytes);
      kquant_block(w.dtype, superblock, static_cast<int>(b % 8), codes, unused_scale, unused_min);
      put_block_codes(w.dtype, codes, dst + (g * blocks + b) * code_bytes + 4 * lane);
    }
  }
}

}  // namespace

void pack_matrix(const WeightMatrix& w, uint8_t* dst) {
  if (w.dtype == DType::kBF16) return pack_lanes<4, 1>(w, dst);
  if (w.dtype == DType::kF16) return pack_lanes<2, kF16PanelGroups>(w, dst);
  if (dtype_has_super_blocks(w.dtype)) return pack_kquant(w, dst);
  CHECK(dtype_is_quantized(w.dtype) && w.cols % 32 == 0)
      << "no packed layout for " << dtype_name(w.dtype);
  const int64_t groups = (w.rows + kPackRows - 1) / kPackRows, blocks = w.cols / 32;
  const int64_t code_bytes = packed_code_bytes(w.dtype);
  const int64_t scale_lanes = w.dtype == DType::kQ5_1 ? 2 * kPackRows : kPackRows;  // f16 d (Q5_1: then m)
  uint8_t* scales = dst + groups * blocks * code_bytes;  // [G, B, scale_lanes] f16
  std::memset(dst, 0, static_cast<size_t>(packed_bytes(w)));
  int8_t codes[32];
  float unused_scale, unused_min;
  for (int64_t r = 0; r < w.rows; ++r) {
    const int64_t g = r / kPackRows, lane = r % kPackRows;
    for (int64_t b = 0; b < blocks; ++b) {
      weight_block(w, r, b, codes, &unused_scale, &unused_min);
      put_block_codes(w.dtype, codes, dst + (g * blocks + b) * code_bytes + 4 * lane);
      // The f16 scales as stored: the block's first 2 bytes (Q5_1: d, then m at 2).
      if (w.dtype == DType::kI8) continue;
      const uint8_t* block = w.row(r) + b * dtype_block_bytes(w.dtype);
      uint8_t* at = scales + ((g * blocks + b) * scale_lanes + lane) * 2;
      std::memcpy(at, block, 2);
      if (w.dtype == DType::kQ5_1) std::memcpy(at + kPackRows * 2, block + 2, 2);
    }
  }
}

}  // namespace zl::cpu
