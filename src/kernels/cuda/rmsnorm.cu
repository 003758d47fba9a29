#include "core/check.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/rmsnorm.h"

namespace zl::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row: add and sum of squares in one pass, scale in a second
// (the row is re-read from L1/L2, not from HBM, for dim up to ~16K).
__global__ void __launch_bounds__(kThreads) add_rmsnorm_kernel(float* x, const float* delta, const float* weight,
                                                               __nv_bfloat16* y, const int32_t* row_index,
                                                               int64_t dim, float eps) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  float* xr = x + (row_index ? int64_t{row_index[r]} : r) * dim;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
    float v = xr[i];
    if (delta) {
      v += delta[r * dim + i];
      xr[i] = v;
    }
    sum_sq += v * v;
  }
  const float scale = rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kThreads) y[r * dim + i] = __float2bfloat16(weight[i] * (xr[i] * scale));
}

}  // namespace

void add_rmsnorm(float* x, const float* delta, const float* weight, Bf16* y, const int32_t* row_index,
                 int64_t num_rows, int64_t dim, float eps, Stream stream) {
  CHECK(!(delta && row_index)) << "add_rmsnorm: a residual add needs every row";
  if (num_rows == 0) return;
  add_rmsnorm_kernel<<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(x, delta, weight, as_bf16(y),
                                                                               row_index, dim, eps);
}

}  // namespace zl::cuda
