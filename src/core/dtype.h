// Element types of tensors in model files and of weights in memory, and
// scalar conversions to f32. Block-quantized types have a block of elements
// per unit: 32 for Q8_0, Q4_0, Q5_0, Q5_1, IQ4_NL; super-blocks of 256 for
// the k-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and IQ4_XS. Use dtype_bytes for
// byte sizes, which checks divisibility and overflow. I8 is int8 with one f32
// scale per row (made at load, never read from a file); its bytes here
// exclude the scales.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "zerolayer/weight_format.h"

namespace zl {

const char* dtype_name(DType dtype);

// Formats of 256-value super-blocks (k-quants and IQ4_XS).
constexpr bool dtype_has_super_blocks(DType d) {
  return d == DType::kQ4_K || d == DType::kQ6_K || d == DType::kQ5_K || d == DType::kQ3_K || d == DType::kQ2_K ||
         d == DType::kIQ4_XS;
}

// Elements per block (1 for plain types, 32 or 256 for the block formats above).
constexpr int64_t dtype_block_elems(DType dtype) {
  if (dtype_has_super_blocks(dtype)) return 256;
  const bool block32 = dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kQ5_0 ||
                       dtype == DType::kQ5_1 || dtype == DType::kIQ4_NL;
  return block32 ? 32 : 1;
}

// Bytes per block.
constexpr int64_t dtype_block_bytes(DType dtype) {
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
    case DType::kQ5_K: return 2 + 2 + 12 + 32 + 128;  // Q4_K's and 256 high bits
    case DType::kQ3_K: return 32 + 64 + 12 + 2;       // 256 high bits; 256 x 2-bit; 6-bit scales; f16 d
    case DType::kQ2_K: return 16 + 64 + 2 + 2;        // 4-bit scales and mins; 256 x 2-bit; f16 d, dmin
    case DType::kIQ4_NL: return 2 + 16;               // f16 d, 32 x 4-bit index
    case DType::kIQ4_XS: return 2 + 2 + 4 + 128;      // f16 d; 6-bit scales; 256 x 4-bit index
  }
  return 0;
}

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

// IQ4_NL and IQ4_XS map each 4-bit index to one of these 16 int8 values
// (ggml's kvalues_iq4nl), a non-uniform grid denser near zero.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};
// The 32 grid values of 16 bytes of IQ4 indices (an IQ4_NL block after its
// f16 d, an IQ4_XS block of 32): element j < 16 is the low nibble of byte j,
// element j + 16 its high nibble (Q4_0's layout).
void iq4_codes(const uint8_t* qs, int8_t* codes);

// One block of 32 elements (j = 0..7) of super-block p, as codes and
// per-half scales and offsets: element i = scale[i / 16] * codes[i] -
// offset[i / 16]. As ggml lays them out:
//   Q4_K (144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins,
//   128 bytes of nibbles): codes 0..15, both scales d * sc_j, both offsets
//   dmin * m_j.
//   Q5_K (176 bytes: Q4_K's 16 bytes, 32 bytes qh, 128 of nibbles): Q4_K's
//   code under bit j of qh[l] as bit 4, codes 0..31.
//   Q6_K (210 bytes: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8
//   scales, f16 d): codes -32..31, scale[h] = d * sc[2j + h], offset 0.
//   Q3_K (110 bytes: 32 bytes hmask, 64 of bit pairs, 12 of 6-bit scales,
//   f16 d): codes -4..3, scale[h] = d * (sc[2j + h] - 32), offset 0.
//   Q2_K (84 bytes: 16 bytes of 4-bit scale and min pairs, 64 of bit pairs,
//   f16 d, f16 dmin): codes 0..3, scale[h] = d * (s & 15), offset[h] =
//   dmin * (s >> 4) for s the byte of half 2j + h.
//   IQ4_XS (136 bytes: f16 d, u16 high scale bits, 4 bytes of low ones, 128
//   of nibbles): codes kIq4Values[nibble], both scales d * (ls_j - 32).
// The products of f16 and integers of up to 8 bits are exact in f32.
void kquant_block(DType dtype, const uint8_t* p, int j, int8_t* codes, float* scale, float* offset);
// The integer scales and f16 scale bits of super-block p:
//   Q4_K, Q5_K: sc[0..7] and mins[0..7] (6 bits each), d_bits = {d, dmin};
//   Q6_K: sc[0..15] (the int8 scales' bytes), d_bits[0] = d; mins unused;
//   Q3_K: sc[0..15] (6 bits each, 32 above the signed scale), d_bits[0] = d;
//   Q2_K: sc[0..15] and mins[0..15] (4 bits each), d_bits = {d, dmin};
//   IQ4_XS: sc[0..7] (6 bits each, 32 above the signed scale), d_bits[0] = d.
void kquant_scales(DType dtype, const uint8_t* p, uint8_t* sc, uint8_t* mins, uint16_t* d_bits);

// cols / block elements of random blocks of a format read from GGUF only
// (Q5_K, Q3_K, Q2_K, IQ4_NL, IQ4_XS: no quantizer here), every code, scale
// and min pattern possible, with f16 scales that put the values at about
// |1| (dmin a quarter of d): test and benchmark matrices of those formats.
void random_gguf_blocks(DType dtype, uint32_t seed, uint8_t* dst, int64_t cols);

}  // namespace zl
