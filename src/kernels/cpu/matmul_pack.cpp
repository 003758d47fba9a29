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
  if (!dtype_is_quantized(w.dtype) || dtype_is_stored_only(w.dtype)) return 0;
  const int64_t blocks = w.cols / 32;
  if (dtype_is_kquant(w.dtype))
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

// A block's 32 codes into one lane's word of each packed vector (v: that
// lane's word in vector 0), as the kernels read them: 4-bit formats (Q4_0,
// Q4_K, and the 5-bit formats' low 4 bits) put codes j and j + 16 in the low and high
// nibble of byte j (j < 16), the 5-bit formats' fifth vector has bit 8j + k for bit 4
// of code 4k + j, Q6_K's fifth and sixth (c = 0, 1) bits 8j + 2q, + 1 for bits 4, 5
// of code 4 (4c + q) + j, 8-bit formats one code a byte; each code plus a bias makes
// it unsigned (Q4_0 8, Q5_0 16, Q4_K / Q5_K / Q5_1 0, Q8_0 / I8 128, Q6_K 32); IQ4_NL and
// IQ4_XS store each grid value's index.
void put_block_codes(DType dtype, const int8_t* codes, uint8_t* v) {
  int8_t index[32];
  if (dtype == DType::kIQ4_NL || dtype == DType::kIQ4_XS) {
    for (int e = 0; e < 32; ++e)
      index[e] = static_cast<int8_t>(std::find(kIq4Values, kIq4Values + 16, codes[e]) - kIq4Values);
    codes = index;
  }
  const int bias = dtype == DType::kQ4_0                      ? 8
                   : dtype == DType::kQ5_0                    ? 16
                   : dtype == DType::kQ6_K                    ? 32
                   : dtype == DType::kQ8_0 || dtype == DType::kI8 ? 128
                                                                : 0;
  if (packed_code_bytes(dtype) == 5 * 64) {  // Q5_0, Q5_1, Q5_K
    uint32_t high = 0;
    for (int e = 0; e < 32; ++e) high |= uint32_t(((codes[e] + bias) >> 4) & 1) << (8 * (e % 4) + e / 4);
    std::memcpy(v + 4 * 64, &high, 4);
  } else if (dtype == DType::kQ6_K) {
    uint32_t high[2] = {0, 0};
    for (int e = 0; e < 32; ++e) high[e / 16] |= uint32_t(((codes[e] + bias) >> 4) & 3) << (8 * (e % 4) + 2 * (e / 4 % 4));
    std::memcpy(v + 4 * 64, &high[0], 4);
    std::memcpy(v + 5 * 64, &high[1], 4);
  }
  if (packed_code_bytes(dtype) != 8 * 64) {
    for (int j = 0; j < 16; ++j)
      v[j / 4 * 64 + j % 4] = static_cast<uint8_t>(((codes[j] + bias) & 0x0f) | ((codes[j + 16] + bias) & 0x0f) << 4);
  } else {
    for (int j = 0; j < 32; ++j) v[j / 4 * 64 + j % 4] = static_cast<uint8_t>(codes[j] + bias);
  }
}

// Lane `lane` of super-block sb's scales (matmul.h): Q4_K / Q5_K d, dmin, then
// the blocks' scales and mins; Q6_K d, then the half blocks' scales; IQ4_XS
// d, then the blocks' scales less 32.
void pack_kscales(const WeightMatrix& w, const uint8_t* superblock, int64_t lane, uint8_t* e) {
  uint8_t sc[16], mins[16];
  uint16_t d_bits[2];
  kquant_scales(w.dtype, superblock, sc, mins, d_bits);
  std::memcpy(e + 2 * lane, &d_bits[0], 2);
  if (w.dtype == DType::kIQ4_XS) {
    for (int j = 0; j < 8; ++j) e[32 + 16 * j + lane] = static_cast<uint8_t>(sc[j] - 32);
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
  if (dtype_is_kquant(w.dtype)) return pack_kquant(w, dst);
  CHECK(dtype_is_quantized(w.dtype) && !dtype_is_stored_only(w.dtype) && w.cols % 32 == 0)
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
