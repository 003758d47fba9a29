#include "core/dtype.h"

#include <cstring>
#include <random>

#include "core/check.h"

namespace zl {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kQ8_0: return "Q8_0";
    case DType::kQ4_0: return "Q4_0";
    case DType::kI8: return "I8";
    case DType::kQ4_K: return "Q4_K";
    case DType::kQ6_K: return "Q6_K";
    case DType::kQ5_0: return "Q5_0";
    case DType::kQ5_1: return "Q5_1";
    case DType::kQ5_K: return "Q5_K";
    case DType::kQ3_K: return "Q3_K";
    case DType::kQ2_K: return "Q2_K";
    case DType::kIQ4_NL: return "IQ4_NL";
    case DType::kIQ4_XS: return "IQ4_XS";
  }
  return "?";
}

std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t num_elems) {
  uint64_t block = static_cast<uint64_t>(dtype_block_elems(dtype));
  if (num_elems % block != 0) return std::nullopt;
  uint64_t blocks = num_elems / block;
  uint64_t per = static_cast<uint64_t>(dtype_block_bytes(dtype));
  if (blocks > UINT64_MAX / per) return std::nullopt;
  return blocks * per;
}

void q5_codes(DType dtype, const uint8_t* p, uint8_t* codes) {
  CHECK(dtype == DType::kQ5_0 || dtype == DType::kQ5_1);
  const uint8_t* qh_bytes = p + (dtype == DType::kQ5_0 ? 2 : 4);
  const uint8_t* qs = qh_bytes + 4;
  const uint32_t qh = uint32_t{qh_bytes[0]} | uint32_t{qh_bytes[1]} << 8 | uint32_t{qh_bytes[2]} << 16 |
                      uint32_t{qh_bytes[3]} << 24;
  for (int j = 0; j < 16; ++j) {
    codes[j] = static_cast<uint8_t>((qs[j] & 0x0f) | ((qh >> j) & 1) << 4);
    codes[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
  }
}

namespace {

// Q4_K / Q5_K: 12 bytes s hold 8 6-bit scales and 8 6-bit mins: for j < 4
// the low 6 bits of s[j] (scale) and s[j + 4] (min); for j >= 4 the nibbles
// of s[j + 4] (scale low, min low) under the top 2 bits of s[j - 4] (scale)
// and s[j] (min).
void scales_mins_6bit(const uint8_t* s, uint8_t* sc, uint8_t* mins) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mins[j] = s[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 0x0f) | (s[j] >> 6) << 4);
    mins[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
  }
}

}  // namespace

void iq4_codes(const uint8_t* qs, int8_t* codes) {
  for (int j = 0; j < 16; ++j) {
    codes[j] = kIq4Values[qs[j] & 0x0f];
    codes[j + 16] = kIq4Values[qs[j] >> 4];
  }
}

void kquant_scales(DType dtype, const uint8_t* p, uint8_t* sc, uint8_t* mins, uint16_t* d_bits) {
  switch (dtype) {
    case DType::kQ4_K:
    case DType::kQ5_K:
      scales_mins_6bit(p + 4, sc, mins);
      std::memcpy(d_bits, p, 4);
      return;
    case DType::kQ6_K:
      std::memcpy(sc, p + 192, 16);
      std::memcpy(d_bits, p + 208, 2);
      return;
    case DType::kQ3_K: {
      // Scale i: the low nibble of s[i] (i < 8) or the high one of s[i - 8],
      // under bits 2 (i / 4), + 1 of s[8 + i % 4].
      const uint8_t* s = p + 96;
      for (int i = 0; i < 16; ++i) {
        const int low = i < 8 ? s[i] & 0x0f : s[i - 8] >> 4;
        sc[i] = static_cast<uint8_t>(low | ((s[8 + i % 4] >> (2 * (i / 4))) & 3) << 4);
      }
      std::memcpy(d_bits, p + 108, 2);
      return;
    }
    case DType::kQ2_K:
      for (int i = 0; i < 16; ++i) {
        sc[i] = p[i] & 0x0f;
        mins[i] = p[i] >> 4;
      }
      std::memcpy(d_bits, p + 80, 4);
      return;
    case DType::kIQ4_XS: {
      // Scale j: the nibble j % 2 of byte 4 + j / 2 under bits 2j, 2j + 1 of the u16 at 2.
      const uint16_t high = static_cast<uint16_t>(p[2] | p[3] << 8);
      for (int j = 0; j < 8; ++j)
        sc[j] = static_cast<uint8_t>(((p[4 + j / 2] >> (4 * (j % 2))) & 0x0f) | ((high >> (2 * j)) & 3) << 4);
      std::memcpy(d_bits, p, 2);
      return;
    }
    default: CHECK(false) << dtype_name(dtype) << " has no super-blocks";
  }
}

namespace {

// Codes of block j of a 256-value super-block p (kquant_block's table).
void super_block_codes(DType dtype, const uint8_t* p, int j, int8_t* codes) {
  switch (dtype) {
    case DType::kQ4_K:
    case DType::kQ5_K: {
      // Blocks 2c and 2c + 1 are the low and high nibbles of qs bytes 32c..32c + 31.
      const bool q5 = dtype == DType::kQ5_K;
      const uint8_t* qs = p + (q5 ? 48 : 16) + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) {
        const int high = q5 ? ((p[16 + l] >> j) & 1) << 4 : 0;
        codes[l] = static_cast<int8_t>(((qs[l] >> shift) & 0x0f) | high);
      }
      return;
    }
    case DType::kQ6_K: {
      // Element e = 128 h + 32 g + l (l < 32) of the super-block: low nibble of
      // ql[64 h + l + 32 (g % 2)] (high nibble when g >= 2), high 2 bits
      // at bit 2 g of qh[32 h + l].
      const int h = j / 4, g = j % 4;
      const uint8_t* ql = p + 64 * h + 32 * (g % 2);
      const uint8_t* qh = p + 128 + 32 * h;
      for (int l = 0; l < 32; ++l) {
        const int low = g < 2 ? ql[l] & 0x0f : ql[l] >> 4;
        codes[l] = static_cast<int8_t>((low | ((qh[l] >> (2 * g)) & 3) << 4) - 32);
      }
      return;
    }
    case DType::kQ3_K:
    case DType::kQ2_K: {
      // Element 128 h + 32 g + l: bits 2g, 2g + 1 of qs[32 h + l]; Q3_K less
      // 4 unless bit j = 4h + g of hmask[l] is set.
      const bool q3 = dtype == DType::kQ3_K;
      const uint8_t* qs = p + (q3 ? 32 : 16) + 32 * (j / 4);
      const int shift = 2 * (j % 4);
      for (int l = 0; l < 32; ++l) {
        const int low = (qs[l] >> shift) & 3;
        codes[l] = static_cast<int8_t>(q3 && ((p[l] >> j) & 1) == 0 ? low - 4 : low);
      }
      return;
    }
    case DType::kIQ4_XS:  // block j: the 16 bytes at 8 + 16 j
      iq4_codes(p + 8 + 16 * j, codes);
      return;
    default: CHECK(false) << dtype_name(dtype) << " has no super-blocks";
  }
}

}  // namespace

void kquant_block(DType dtype, const uint8_t* p, int j, int8_t* codes, float* scale, float* offset) {
  uint8_t sc[16], mins[16];
  uint16_t d_bits[2];
  kquant_scales(dtype, p, sc, mins, d_bits);
  super_block_codes(dtype, p, j, codes);
  const float d = f16_to_f32(d_bits[0]);
  offset[0] = offset[1] = 0.0f;
  switch (dtype) {
    case DType::kQ4_K:
    case DType::kQ5_K:
      scale[0] = scale[1] = d * static_cast<float>(sc[j]);
      offset[0] = offset[1] = f16_to_f32(d_bits[1]) * static_cast<float>(mins[j]);
      return;
    case DType::kQ6_K:
      for (int h = 0; h < 2; ++h) scale[h] = d * static_cast<float>(static_cast<int8_t>(sc[2 * j + h]));
      return;
    case DType::kQ3_K:
      for (int h = 0; h < 2; ++h) scale[h] = d * static_cast<float>(sc[2 * j + h] - 32);
      return;
    case DType::kQ2_K:
      for (int h = 0; h < 2; ++h) {
        scale[h] = d * static_cast<float>(sc[2 * j + h]);
        offset[h] = f16_to_f32(d_bits[1]) * static_cast<float>(mins[2 * j + h]);
      }
      return;
    default:  // kIQ4_XS
      scale[0] = scale[1] = d * static_cast<float>(sc[j] - 32);
      return;
  }
}

void dtype_to_f32(DType dtype, const void* src, float* dst, int64_t num_elems) {
  const uint8_t* p = static_cast<const uint8_t*>(src);
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, p, static_cast<size_t>(num_elems) * 4);
      return;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < num_elems; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    case DType::kI8:
      for (int64_t i = 0; i < num_elems; ++i) dst[i] = static_cast<float>(static_cast<int8_t>(p[i]));
      return;
    case DType::kQ8_0:
      // Block: f16 d, int8 q[32]; x = d * q.
      CHECK(num_elems % 32 == 0);
      for (int64_t b = 0; b < num_elems / 32; ++b, p += 34) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        float d = f16_to_f32(h);
        for (int j = 0; j < 32; ++j) dst[b * 32 + j] = d * static_cast<int8_t>(p[2 + j]);
      }
      return;
    case DType::kQ4_0:
      // Block: f16 d, 16 bytes; element j < 16 is the low nibble of byte j,
      // element j + 16 its high nibble; x = d * (nibble - 8).
      CHECK(num_elems % 32 == 0);
      for (int64_t b = 0; b < num_elems / 32; ++b, p += 18) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        float d = f16_to_f32(h);
        for (int j = 0; j < 16; ++j) {
          dst[b * 32 + j] = d * static_cast<float>((p[2 + j] & 0x0f) - 8);
          dst[b * 32 + j + 16] = d * static_cast<float>((p[2 + j] >> 4) - 8);
        }
      }
      return;
    case DType::kQ5_0:
    case DType::kQ5_1: {
      // As ggml's dequantize_row_q5_0 / _q5_1: one f32 product (exact) and,
      // for Q5_1, one rounded sum per value.
      CHECK(num_elems % 32 == 0);
      const int64_t block_bytes = dtype_block_bytes(dtype);
      uint8_t codes[32];
      for (int64_t b = 0; b < num_elems / 32; ++b, p += block_bytes) {
        uint16_t h[2] = {0, 0};
        std::memcpy(h, p, dtype == DType::kQ5_0 ? 2 : 4);
        const float d = f16_to_f32(h[0]);
        q5_codes(dtype, p, codes);
        if (dtype == DType::kQ5_0) {
          for (int j = 0; j < 32; ++j) dst[b * 32 + j] = d * static_cast<float>(codes[j] - 16);
        } else {
          const float m = f16_to_f32(h[1]);
          for (int j = 0; j < 32; ++j) dst[b * 32 + j] = d * static_cast<float>(codes[j]) + m;
        }
      }
      return;
    }
    case DType::kIQ4_NL: {
      // Block: f16 d, 16 bytes of indices (iq4_codes); x = d * kIq4Values[index].
      CHECK(num_elems % 32 == 0);
      int8_t codes[32];
      for (int64_t b = 0; b < num_elems / 32; ++b, p += 18) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        const float d = f16_to_f32(h);
        iq4_codes(p + 2, codes);
        for (int j = 0; j < 32; ++j) dst[b * 32 + j] = d * static_cast<float>(codes[j]);
      }
      return;
    }
    case DType::kQ4_K:
    case DType::kQ6_K:
    case DType::kQ5_K:
    case DType::kQ3_K:
    case DType::kQ2_K:
    case DType::kIQ4_XS: {
      // As ggml's dequantize_row_*: one rounded product (and difference) per value.
      CHECK(num_elems % 256 == 0);
      const int64_t block_bytes = dtype_block_bytes(dtype);
      int8_t codes[32];
      float scale[2], offset[2];
      for (int64_t b = 0; b < num_elems / 32; ++b) {
        kquant_block(dtype, p + b / 8 * block_bytes, static_cast<int>(b % 8), codes, scale, offset);
        for (int i = 0; i < 32; ++i)
          dst[b * 32 + i] = scale[i / 16] * static_cast<float>(codes[i]) - offset[i / 16];
      }
      return;
    }
  }
}

void random_gguf_blocks(DType dtype, uint32_t seed, uint8_t* dst, int64_t cols) {
  CHECK(dtype == DType::kQ5_K || dtype == DType::kQ3_K || dtype == DType::kQ2_K || dtype == DType::kIQ4_NL ||
        dtype == DType::kIQ4_XS);
  std::mt19937 rng(seed);
  const int64_t block_bytes = dtype_block_bytes(dtype), blocks = cols / dtype_block_elems(dtype);
  // d such that the largest code times the largest integer scale is ~1.
  const float unit = dtype == DType::kQ5_K     ? 1.0f / (63 * 31)
                     : dtype == DType::kQ3_K   ? 1.0f / (32 * 4)
                     : dtype == DType::kQ2_K   ? 1.0f / (15 * 3)
                     : dtype == DType::kIQ4_XS ? 1.0f / (32 * 127)
                                               : 1.0f / 127;
  // Byte offsets of the f16 d and dmin (-1: none) in a block.
  const int d_at = dtype == DType::kQ3_K ? 108 : dtype == DType::kQ2_K ? 80 : 0;
  const int dmin_at = dtype == DType::kQ5_K ? 2 : dtype == DType::kQ2_K ? 82 : -1;
  std::uniform_real_distribution<float> around(0.5f, 1.5f);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* p = dst + b * block_bytes;
    for (int64_t i = 0; i < block_bytes; ++i) p[i] = static_cast<uint8_t>(rng());
    const uint16_t d = f32_to_f16(unit * around(rng)), dmin = f32_to_f16(0.25f * unit * around(rng));
    std::memcpy(p + d_at, &d, 2);
    if (dmin_at >= 0) std::memcpy(p + dmin_at, &dmin, 2);
  }
}

}  // namespace zl
