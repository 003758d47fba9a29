// Skinny products for decode: y = x · Wᵀ for a few tokens, streaming W once
// at close to the memory bandwidth. cuBLASLt's kernels for one token reach
// 12-60% of an H200's bandwidth on a 1B model's layer shapes (each call
// ~15 us however small: bench/gpu_bench --gemm-shapes); a decode step of a
// few sequences is nothing but such calls, so this kernel takes them.
//
// One warp per output feature: its lanes read the weight row in 16-byte
// pieces (8 bf16), eight pieces in flight per lane, multiply them with every
// token's x (read through the cache: x is small and shared by all warps) and
// sum the lanes with shuffles in a fixed order, so a row's result does not
// depend on the other rows or on the token count.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"
#include "zerolayer/status.h"

namespace zl::cuda {

// Each token multiplies every weight piece by its own x piece, read through
// L1: at 8 tokens that traffic is 8x the weights' and bounds the kernel below
// cuBLASLt (on an H200, gate_up of a 1B model: 0.048 ms vs 0.026); up to 4
// it stays under what L1 serves.
inline constexpr int64_t kGemvMaxTokens = 4;

// Whether gemv() takes this call: 1..kGemvMaxTokens tokens, x and w 16-byte
// aligned and rows of whole 16-byte pieces (k % 8 == 0, so every row starts
// aligned too).
inline bool gemv_supports(const Bf16* x, const Bf16* w, int64_t num_tokens, int64_t k) {
  const bool aligned = ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(w)) & 15) == 0;
  return aligned && num_tokens >= 1 && num_tokens <= kGemvMaxTokens && k % 8 == 0;
}

// x: [num_tokens, k] bf16; w: [n, k] bf16; y: [num_tokens, n] f32.
// Fails if !gemv_supports(x, w, num_tokens, k).
Status gemv(const Bf16* x, const Bf16* w, float* y, int64_t num_tokens, int64_t n, int64_t k, Stream stream);

}  // namespace zl::cuda
