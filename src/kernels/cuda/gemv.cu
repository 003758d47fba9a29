#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gemv.h"

namespace zl::cuda {
namespace {

constexpr int kWarps = 8;    // output features per block
// 16-byte weight pieces each lane loads before using them: 8 cover a whole
// row of k = 2048 in one round trip (short kernels are latency-bound).
constexpr int kInFlight = 8;

// acc[t] += dot(w piece, x piece of token t) over the 8 elements, in order.
template <int T>
__device__ __forceinline__ void fma_piece(const uint4& w_piece, const uint4* x, int64_t x_row_pieces, int64_t piece,
                                          float* acc) {
  float wf[8];
  unpack_bf16x8(w_piece, wf);
#pragma unroll
  for (int t = 0; t < T; ++t) {
    float xf[8];
    unpack_bf16x8(__ldg(x + t * x_row_pieces + piece), xf);
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[t] = fmaf(wf[j], xf[j], acc[t]);
  }
}

// Block: kWarps warps, warp w computing feature blockIdx.x * kWarps + w for
// all T tokens. Lane l takes pieces l, l + 32, ...; the weight pieces are
// streamed (evict-first), x stays cached.
template <int T>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(const uint4* __restrict__ x, const uint4* __restrict__ w,
                                                           float* __restrict__ y, int64_t n, int64_t k_pieces) {
  const int64_t row = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  if (row >= n) return;
  const int lane = threadIdx.x % 32;
  const uint4* w_row = w + row * k_pieces;
  float acc[T];
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t] = 0.0f;
  int64_t piece = lane;
  for (; piece + 32 * (kInFlight - 1) < k_pieces; piece += 32 * kInFlight) {
    uint4 loaded[kInFlight];
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) loaded[i] = __ldcs(w_row + piece + 32 * i);
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) fma_piece<T>(loaded[i], x, k_pieces, piece + 32 * i, acc);
  }
  for (; piece < k_pieces; piece += 32) fma_piece<T>(__ldcs(w_row + piece), x, k_pieces, piece, acc);
#pragma unroll
  for (int t = 0; t < T; ++t) acc[t] = warp_sum(acc[t]);
  if (lane < T) {
    // Lane t writes token t's value (a constant index into acc keeps it in registers).
#pragma unroll
    for (int t = 0; t < T; ++t)
      if (lane == t) y[t * n + row] = acc[t];
  }
}

template <int T>
void launch(const Bf16* x, const Bf16* w, float* y, int64_t n, int64_t k, Stream stream) {
  const unsigned blocks = static_cast<unsigned>(ceil_div(n, kWarps));
  gemv_kernel<T><<<blocks, kWarps * 32, 0, stream>>>(reinterpret_cast<const uint4*>(x),
                                                     reinterpret_cast<const uint4*>(w), y, n, k / 8);
}

}  // namespace

Status gemv(const Bf16* x, const Bf16* w, float* y, int64_t num_tokens, int64_t n, int64_t k, Stream stream) {
  if (!gemv_supports(x, w, num_tokens, k))
    return invalid_argument("gemv takes 1..", kGemvMaxTokens, " tokens, 16-byte aligned x and w and k a multiple "
                            "of 8, got ", num_tokens, " tokens, k=", k);
  if (n == 0) return ok_status();
  switch (num_tokens) {
    case 1: launch<1>(x, w, y, n, k, stream); break;
    case 2: launch<2>(x, w, y, n, k, stream); break;
    case 3: launch<3>(x, w, y, n, k, stream); break;
    default: launch<4>(x, w, y, n, k, stream); break;
  }
  return check_launch("gemv_kernel");
}

}  // namespace zl::cuda
