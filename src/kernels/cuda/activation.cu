#include "kernels/cuda/activation.h"
#include "kernels/cuda/common.cuh"

namespace zl::cuda {
namespace {

__global__ void swiglu_kernel(const float* gate_up, __nv_bfloat16* out, int64_t num_tokens, int64_t hidden) {
  const int64_t n = num_tokens * hidden;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / hidden, j = i % hidden;
    const float g = gate_up[t * 2 * hidden + j];
    const float u = gate_up[t * 2 * hidden + hidden + j];
    out[i] = __float2bfloat16(g / (1.0f + expf(-g)) * u);
  }
}

}  // namespace

void swiglu(const float* gate_up, Bf16* out, int64_t num_tokens, int64_t hidden, Stream stream) {
  const int64_t n = num_tokens * hidden;
  if (n == 0) return;
  const int64_t blocks = std::min<int64_t>(ceil_div(n, 256), 132 * 16);
  swiglu_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(gate_up, as_bf16(out), num_tokens, hidden);
}

}  // namespace zl::cuda
