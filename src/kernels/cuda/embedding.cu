#include "kernels/cuda/common.cuh"
#include "kernels/cuda/embedding.h"

namespace zl::cuda {
namespace {

// One block per token; consecutive threads read consecutive elements.
__global__ void embedding_kernel(const int32_t* tokens, const __nv_bfloat16* table, float* x, int64_t dim) {
  const int64_t t = blockIdx.x;
  const __nv_bfloat16* row = table + int64_t{tokens[t]} * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) x[t * dim + i] = __bfloat162float(row[i]);
}

}  // namespace

void embedding(const int32_t* tokens, const Bf16* table, float* x, int64_t num_tokens, int64_t dim, Stream stream) {
  if (num_tokens == 0) return;
  embedding_kernel<<<static_cast<unsigned>(num_tokens), 256, 0, stream>>>(tokens, as_bf16(table), x, dim);
}

}  // namespace zl::cuda
