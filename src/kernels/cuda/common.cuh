// Helpers shared by the .cu files: error checks, bf16 conversion and warp /
// block reductions. Internal to src/kernels/cuda and the CUDA model.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/runtime.h"
#include "zerolayer/status.h"

namespace zl::cuda {

Status cuda_status(cudaError_t error, const char* what);

// Returns the Status of a CUDA call from the enclosing function on failure.
#define ZL_CUDA_RETURN_IF_ERROR(call)                                         \
  do {                                                                        \
    cudaError_t zl_cuda_error_ = (call);                                      \
    if (zl_cuda_error_ != cudaSuccess) return ::zl::cuda::cuda_status(zl_cuda_error_, #call); \
  } while (0)

__host__ __device__ inline __nv_bfloat16* as_bf16(Bf16* p) { return reinterpret_cast<__nv_bfloat16*>(p); }
__host__ __device__ inline const __nv_bfloat16* as_bf16(const Bf16* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// 8 bf16 in a 16-byte load -> 8 floats (a bf16 is the top half of an f32).
__device__ __forceinline__ void unpack_bf16x8(const uint4& v, float* f) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(words[i] << 16);
    f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block; every thread gets the result. scratch: >= 32 floats of
// shared memory, free on entry; blockDim.x a multiple of 32.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, num_warps = blockDim.x / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? scratch[lane] : -FLT_MAX;
  return warp_max(v);
}

}  // namespace zl::cuda
