#include "kernels/cuda/common.cuh"
#include "kernels/cuda/rope.h"

namespace zl::cuda {
namespace {

// One block per token. Work items: every rotation pair of q and k heads, then
// every element of v.
__global__ void rope_store_kv_kernel(RopeKvArgs a) {
  const int64_t t = blockIdx.x;
  const int32_t half = a.head_dim / 2;
  const int64_t q_dim = int64_t{a.num_heads} * a.head_dim, kv_dim = int64_t{a.num_kv_heads} * a.head_dim;
  float* row = a.qkv + t * (q_dim + 2 * kv_dim);
  const int32_t pos = a.positions[t];
  const int32_t slot = a.slots[t];
  const int64_t num_pairs = int64_t{a.num_heads + a.num_kv_heads} * half;
  for (int64_t item = threadIdx.x; item < num_pairs; item += blockDim.x) {
    const int64_t head = item / half;
    const int32_t i = static_cast<int32_t>(item % half);
    const int32_t ia = a.interleaved ? 2 * i : i, ib = a.interleaved ? 2 * i + 1 : i + half;
    float* v = row + head * a.head_dim;  // q heads, then k heads, are contiguous
    const int64_t base = head * a.head_dim;
    float x0 = v[ia], x1 = v[ib];
    if (a.bias) {
      x0 += a.bias[base + ia];
      x1 += a.bias[base + ib];
    }
    float s, c;
    sincosf(static_cast<float>(pos) * a.inv_freq[i], &s, &c);
    const float y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
    if (head < a.num_heads) {
      v[ia] = y0;
      v[ib] = y1;
    } else if (slot >= 0) {
      __nv_bfloat16* k = as_bf16(a.k_cache) + int64_t{slot} * kv_dim + (head - a.num_heads) * a.head_dim;
      k[ia] = __float2bfloat16(y0);
      k[ib] = __float2bfloat16(y1);
    }
  }
  if (slot < 0) return;
  const float* v_in = row + q_dim + kv_dim;
  for (int64_t i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    const float v = v_in[i] + (a.bias ? a.bias[q_dim + kv_dim + i] : 0.0f);
    as_bf16(a.v_cache)[int64_t{slot} * kv_dim + i] = __float2bfloat16(v);
  }
}

}  // namespace

void rope_store_kv(const RopeKvArgs& args, Stream stream) {
  if (args.num_tokens == 0) return;
  rope_store_kv_kernel<<<static_cast<unsigned>(args.num_tokens), 128, 0, stream>>>(args);
}

}  // namespace zl::cuda
