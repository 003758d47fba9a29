#include "core/dtype.h"

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
  }
  return "?";
}

int64_t dtype_block_elems(DType dtype) {
  if (dtype == DType::kQ4_K || dtype == DType::kQ6_K) return 256;
  const bool block32 =
      dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ5_0 || dtype == DType::kQ5_1;
  return block32 ? 32 : 1;
}

int64_t dtype_block_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kQ8_0: return 2 + 32;       // f16 scale, 32 x int8
    case DType::kQ4_0: return 2 + 16;       // f16 scale, 32 x 4-bit
    case DType::kI8: return 1;
    case DType::kQ4_K: return 2 + 2 + 12 + 128;  // f16 d, dmin; 6-bit scales, mins; 256 x 4-bit
    case DType::kQ6_K: return 128 + 64 + 16 + 2;  // 256 x (4 + 2 bits); int8 scales; f16 d
    case DType::kQ5_0: return 2 + 4 + 16;           // f16 d; 32 high bits; 32 x 4-bit
    case DType::kQ5_1: return 2 + 2 + 4 + 16;       // f16 d, m; 32 high bits; 32 x 4-bit
  }
  return 0;
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

void kquant_scales(DType dtype, const uint8_t* p, uint8_t* sc, uint8_t* mins, uint16_t* d_bits) {
  if (dtype == DType::kQ4_K) {
    // 12 bytes s hold 8 6-bit scales and 8 6-bit mins: for j < 4 the low 6
    // bits of s[j] (scale) and s[j + 4] (min); for j >= 4 the nibbles of
    // s[j + 4] (scale low, min low) under the top 2 bits of s[j - 4]
    // (scale) and s[j] (min).
    const uint8_t* s = p + 4;
    for (int j = 0; j < 4; ++j) {
      sc[j] = s[j] & 63;
      mins[j] = s[j + 4] & 63;
      sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 0x0f) | (s[j] >> 6) << 4);
      mins[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
    }
    std::memcpy(d_bits, p, 4);
    return;
  }
  CHECK(dtype == DType::kQ6_K);
  std::memcpy(sc, p + 192, 16);
  std::memcpy(d_bits, p + 208, 2);
}

void kquant_block(DType dtype, const uint8_t* p, int j, int8_t* codes, float* scale, float* offset) {
  uint8_t sc[16], mins[8];
  uint16_t d_bits[2];
  kquant_scales(dtype, p, sc, mins, d_bits);
  if (dtype == DType::kQ4_K) {
    // Blocks 2c and 2c + 1 are the low and high nibbles of qs bytes 32c..32c + 31.
    const uint8_t* qs = p + 16 + 32 * (j / 2);
    const int shift = 4 * (j % 2);
    for (int i = 0; i < 32; ++i) codes[i] = static_cast<int8_t>((qs[i] >> shift) & 0x0f);
    scale[0] = scale[1] = f16_to_f32(d_bits[0]) * static_cast<float>(sc[j]);
    *offset = f16_to_f32(d_bits[1]) * static_cast<float>(mins[j]);
    return;
  }
  CHECK(dtype == DType::kQ6_K);
  // Element e = 128 h + 32 g + l (l < 32) of the super-block: low nibble of
  // ql[64 h + l + 32 (g % 2)] (high nibble when g >= 2), high 2 bits
  // at bit 2 g of qh[32 h + l]; its scale is sc[e / 16].
  const int h = j / 4, g = j % 4;
  const uint8_t* ql = p + 64 * h + 32 * (g % 2);
  const uint8_t* qh = p + 128 + 32 * h;
  for (int l = 0; l < 32; ++l) {
    const int low = g < 2 ? ql[l] & 0x0f : ql[l] >> 4;
    codes[l] = static_cast<int8_t>((low | ((qh[l] >> (2 * g)) & 3) << 4) - 32);
  }
  const float d = f16_to_f32(d_bits[0]);
  scale[0] = d * static_cast<float>(static_cast<int8_t>(sc[2 * j]));
  scale[1] = d * static_cast<float>(static_cast<int8_t>(sc[2 * j + 1]));
  *offset = 0.0f;
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
    case DType::kQ4_K:
    case DType::kQ6_K: {
      CHECK(num_elems % 256 == 0);
      const int64_t block_bytes = dtype_block_bytes(dtype);
      int8_t codes[32];
      float scale[2], offset;
      for (int64_t b = 0; b < num_elems / 32; ++b) {
        kquant_block(dtype, p + b / 8 * block_bytes, static_cast<int>(b % 8), codes, scale, &offset);
        for (int i = 0; i < 32; ++i) dst[b * 32 + i] = scale[i / 16] * static_cast<float>(codes[i]) - offset;
      }
      return;
    }
  }
}

}  // namespace zl
