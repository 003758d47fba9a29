// Element types of tensors in model files and of weights in memory, and
// scalar conversions to f32. Block-quantized types (Q8_0, Q4_0, Q5_0, Q5_1:
// 32 elements; the k-quants Q4_K, Q6_K: super-blocks of 256) have a block of
// elements per unit; use dtype_bytes for byte sizes, which checks
// divisibility and overflow. I8 is int8 with one f32 scale per row (made at
// load, never read from a file); its bytes here exclude the scales.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "zerolayer/weight_format.h"

namespace zl {

const char* dtype_name(DType dtype);
// Elements per block (1 for plain types, 32 for Q8_0/Q4_0/Q5_0/Q5_1, 256 for Q4_K/Q6_K).
int64_t dtype_block_elems(DType dtype);
// Bytes per block.
int64_t dtype_block_bytes(DType dtype);
// Bytes for num_elems elements; nullopt on overflow or a partial block.
std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t num_elems);

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

#ifdef __FLT16_MANT_DIG__  // the compiler has _Float16 (GCC 12, clang 15 on x86)
inline float f16_to_f32(uint16_t h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}

inline uint16_t f32_to_f16(float f) {
  _Float16 x = static_cast<_Float16>(f);
  uint16_t h;
  std::memcpy(&h, &x, 2);
  return h;
}
#else  // clang 14 (the fuzzing and sanitizer builds): the same conversions in integer arithmetic
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf, NaN (payload kept)
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even; overflow gives inf, NaN stays NaN.
inline uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past 65504
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal (or zero) f16
    const int shift = 126 - int(magnitude >> 23);  // 14 + (113 - exponent)
    if (shift > 24) return sign;
    const uint32_t m = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t half = m >> shift, rest = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
    return uint16_t(sign | (half + (rest > mid || (rest == mid && (half & 1)))));
  }
  const uint32_t rebased = magnitude - (112u << 23);
  const uint32_t half = rebased >> 13, rest = rebased & 0x1fffu;
  return uint16_t(sign | (half + (rest > 0x1000u || (rest == 0x1000u && (half & 1)))));
}
#endif

// Converts num_elems elements of `dtype` at src (unaligned is fine) to f32.
// For kI8 this gives the raw integers (the caller applies the row scale).
void dtype_to_f32(DType dtype, const void* src, float* dst, int64_t num_elems);

// Block p of a Q5_0 (22 bytes: f16 d, 4 bytes qh, 16 bytes qs) or Q5_1
// (24 bytes: f16 d, f16 m, qh, qs) matrix as 5-bit codes 0..31, as ggml lays
// them out: element j < 16 is the low nibble of qs[j] under bit j of qh
// (little-endian u32), element j + 16 the high nibble under bit j + 16.
// Q5_0: x = d * (code - 16); Q5_1: x = d * code + m.
void q5_codes(DType dtype, const uint8_t* p, uint8_t* codes);

// One block of 32 elements (j = 0..7) of a Q4_K or Q6_K super-block p, as
// codes and scales: element i = scale[i / 16] * codes[i] - offset.
//   Q4_K (144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins,
//   128 bytes of nibbles): codes 0..15, both scales d * sc_j, offset dmin * m_j.
//   Q6_K (210 bytes: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8
//   scales, f16 d): codes -32..31, scale[h] = d * sc[2j + h], offset 0.
// The products of f16 and 6- or 8-bit integers are exact in f32.
void kquant_block(DType dtype, const uint8_t* p, int j, int8_t* codes, float* scale, float* offset);
// The integer scales and f16 scale bits of super-block p:
//   Q4_K: sc[0..7] and mins[0..7] (6 bits each), d_bits = {d, dmin};
//   Q6_K: sc[0..15] (the int8 scales' bytes), d_bits[0] = d; mins unused.
void kquant_scales(DType dtype, const uint8_t* p, uint8_t* sc, uint8_t* mins, uint16_t* d_bits);

}  // namespace zl
