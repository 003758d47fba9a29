// Quantizers. Weights: f32 rows to GGUF Q8_0 / Q4_0 / Q5_0 / Q5_1 blocks
// (bit-identical to ggml's reference quantize_row_q8_0_ref, _q4_0_ref,
// _q5_0_ref, _q5_1_ref, so a file we write is what llama-quantize would write
// from the same f32 weights; but for a block too small for 1 / its scale,
// where ggml's int conversion of inf is undefined: finite_inverse) and to
// int8 with one scale per row.
// Activations: f32 rows to int8 blocks of 32 with an f32 scale each (ggml's
// Q8_0 activation format), the input of the integer dot products of the
// quantized matmul kernels.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/dtype.h"

namespace zl::cpu {

// src: [n], n a multiple of 32; dst: n / 32 blocks of 34 (Q8_0) or 18 (Q4_0) bytes.
void quantize_row_q8_0(const float* src, uint8_t* dst, int64_t n);
void quantize_row_q4_0(const float* src, uint8_t* dst, int64_t n);
// n / 32 blocks of 22 (Q5_0) or 24 (Q5_1) bytes (layouts: core/dtype.h).
void quantize_row_q5_0(const float* src, uint8_t* dst, int64_t n);
void quantize_row_q5_1(const float* src, uint8_t* dst, int64_t n);
// src: [n], n a multiple of 256; dst: n / 256 super-blocks of 144 (Q4_K) or
// 210 (Q6_K) bytes (layouts: core/dtype.h). Plain round-to-nearest from each
// block's range: valid files that llama.cpp reads, not bit-identical to
// llama-quantize's (which searches scales to minimise the error).
void quantize_row_q4_k(const float* src, uint8_t* dst, int64_t n);
void quantize_row_q6_k(const float* src, uint8_t* dst, int64_t n);
// Symmetric int8: scale = max|x| / 127, q = round(x / scale). Returns the scale.
float quantize_row_i8(const float* src, int8_t* dst, int64_t n);
// The multiplier codes come from (q = round(x * inverse)) for a block scale
// d: 0 where 1 / d is not finite (d 0, or so small that it overflows), so
// that such a block's values all get the code of 0 instead of converting
// inf or NaN to an int, which C++ leaves undefined.
inline float finite_inverse(float d) {
  const float inverse = 1.0f / d;
  return std::isfinite(inverse) ? inverse : 0.0f;
}
// The scale of symmetric int8 codes of values whose max |x| is amax, and
// its finite_inverse (0 for amax below ~3.7e-37).
struct Int8Scale {
  float scale, inverse;
};
inline Int8Scale int8_scale(float amax) {
  const float scale = amax / 127.0f;
  return {scale, finite_inverse(scale)};
}

// Activations of num_rows rows of n (multiple of 32) values:
//   q: [num_rows, n] int8, d: [num_rows, n / 32] block scale (max|x| / 127),
//   ds: [num_rows, n / 32] d * sum(q of the block), for the kernels' offset
//   correction (see matmul_avx512.cpp). Round-to-nearest-even, so every
//   implementation gives the same bytes.
void quantize_activations(const float* x, int64_t num_rows, int64_t n, int8_t* q, float* d, float* ds);
// The same bytes from AVX-512 (F, BW) or AVX2 instructions
// (quantize_simd.cpp), for a CPU that has them.
void quantize_activations_avx512(const float* x, int64_t num_rows, int64_t n, int8_t* q, float* d, float* ds);
void quantize_activations_avx2(const float* x, int64_t num_rows, int64_t n, int8_t* q, float* d, float* ds);
// One block's outputs of those: its scale (max|x| / 127) as stored, rounded
// through f16 as llama.cpp's block_q8_0 activations keep it (the codes come
// from the f32 scale), and that times the sum of its codes.
inline void activation_block_scales(float scale, int32_t sum, float* d, float* ds) {
  const float stored = f16_to_f32(f32_to_f16(scale));
  *d = stored;
  *ds = stored * static_cast<float>(sum);
}
// sums: [num_rows, n / 16], the sum of each 16 codes of q (Q6_K's half blocks).
void half_block_sums(const int8_t* q, int64_t num_rows, int64_t n, int32_t* sums);

}  // namespace zl::cpu
