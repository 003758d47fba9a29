#include <algorithm>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/common.cuh"

namespace zl::cuda {
namespace {

constexpr int kRows = kAttentionRowsPerBlock;  // one warp per query row
constexpr int kThreads = 32 * kRows;
constexpr int kTile = 32;                      // positions per shared-memory tile (one per lane)
constexpr int kMaxPerLane = kAttentionMaxHeadDim / 32;

size_t shared_bytes(int32_t head_dim) {
  // K and V tiles [kTile, head_dim + 1] f32, and the rows' scaled q [kRows, head_dim].
  return sizeof(float) * (2 * kTile * (head_dim + 1) + kRows * head_dim);
}

// See attention.h. Lane l of a warp owns output dims l, l + 32, ... and, while
// scoring, tile position l.
__global__ void __launch_bounds__(kThreads) attention_kernel(AttentionArgs a) {
  extern __shared__ float smem[];
  const int32_t hd = a.head_dim, stride = hd + 1;
  float* k_tile = smem;
  float* v_tile = k_tile + kTile * stride;
  float* q_rows = v_tile + kTile * stride;

  const int32_t seq = blockIdx.y;
  const int32_t n = a.seq_num_tokens[seq];
  const int32_t group = a.num_heads / a.num_kv_heads;
  const int32_t num_rows = n * group;
  const int32_t row0 = blockIdx.x * kRows;
  if (row0 >= num_rows) return;
  const int32_t num_splits = gridDim.z / a.num_kv_heads;
  const int32_t kv_head = blockIdx.z % a.num_kv_heads, split = blockIdx.z / a.num_kv_heads;
  const int32_t start = a.seq_start_pos[seq], begin = a.seq_token_begin[seq];
  const int32_t* table = a.block_tables + a.table_begin[seq];
  const int64_t kv_dim = int64_t{a.num_kv_heads} * hd;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int32_t row = row0 + warp;
  const bool row_valid = row < num_rows;
  const int32_t token_local = row_valid ? row / group : 0;
  const int32_t head = kv_head * group + (row_valid ? row % group : 0);
  const int64_t token = begin + token_local;
  const int32_t pos = start + token_local;  // this row sees keys [0, pos]

  // Keys this block reads: the split's range, cut at the block's last row.
  const int32_t last_row = min(row0 + kRows, num_rows) - 1;
  const int32_t block_end = start + last_row / group + 1;
  const int32_t seq_len = start + n;
  const int32_t split_len = (((seq_len + num_splits - 1) / num_splits) + kTile - 1) / kTile * kTile;
  const int32_t kv_begin = split * split_len;
  const int32_t kv_end = min(kv_begin + split_len, block_end);

  if (row_valid)
    for (int32_t d = lane; d < hd; d += 32) q_rows[warp * hd + d] = a.q[token * a.q_stride + int64_t{head} * hd + d] * a.scale;

  float m = -INFINITY, l = 0.0f, acc[kMaxPerLane];
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) acc[i] = 0.0f;

  for (int32_t tile = kv_begin; tile < kv_end; tile += kTile) {
    __syncthreads();  // the previous tile is consumed (and q_rows written, on the first pass)
    for (int32_t idx = threadIdx.x; idx < kTile * hd; idx += kThreads) {
      const int32_t p = idx / hd, d = idx % hd, kv_pos = tile + p;
      float kv = 0.0f, vv = 0.0f;
      if (kv_pos < kv_end) {
        const int64_t slot = int64_t{table[kv_pos / a.block_size]} * a.block_size + kv_pos % a.block_size;
        const int64_t off = slot * kv_dim + int64_t{kv_head} * hd + d;
        kv = __bfloat162float(as_bf16(a.k_cache)[off]);
        vv = __bfloat162float(as_bf16(a.v_cache)[off]);
      }
      k_tile[p * stride + d] = kv;
      v_tile[p * stride + d] = vv;
    }
    __syncthreads();
    if (!row_valid) continue;
    const int32_t kv_pos = tile + lane;
    float score = -INFINITY;
    if (kv_pos < kv_end && kv_pos <= pos) {
      float dot = 0.0f;
      for (int32_t d = 0; d < hd; ++d) dot += q_rows[warp * hd + d] * k_tile[lane * stride + d];
      score = dot;
    }
    const float m_new = fmaxf(m, warp_max(score));
    if (m_new == -INFINITY) continue;  // nothing visible yet in this tile
    const float correction = __expf(m - m_new);
    const float w = __expf(score - m_new);
    l = l * correction + warp_sum(w);
    m = m_new;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) acc[i] *= correction;
    const int32_t tile_len = min(kTile, kv_end - tile);
    for (int32_t p = 0; p < tile_len; ++p) {
      const float wp = __shfl_sync(0xffffffffu, w, p);
#pragma unroll
      for (int i = 0; i < kMaxPerLane; ++i) {
        const int32_t d = lane + 32 * i;
        if (d < hd) acc[i] += wp * v_tile[p * stride + d];
      }
    }
  }
  if (!row_valid) return;

  if (num_splits == 1) {
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    __nv_bfloat16* out = as_bf16(a.out) + token * a.num_heads * hd + int64_t{head} * hd;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int32_t d = lane + 32 * i;
      if (d < hd) out[d] = __float2bfloat16(acc[i] * inv);
    }
    return;
  }
  // Partial for the merge: [m, l, acc[hd]] at (seq, head, split).
  float* part = a.split_workspace + ((int64_t{seq} * a.num_heads + head) * num_splits + split) * (hd + 2);
  if (lane == 0) {
    part[0] = m;
    part[1] = l;
  }
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int32_t d = lane + 32 * i;
    if (d < hd) part[2 + d] = acc[i];
  }
}

// One block per (seq, head): out = Σ e^(m_s - M) acc_s / Σ e^(m_s - M) l_s
// over the splits that saw any key (every split block writes its partial;
// one whose range lies past the sequence's end writes l = 0).
__global__ void merge_splits_kernel(AttentionArgs a, int32_t num_splits) {
  const int32_t seq = blockIdx.x, head = blockIdx.y, hd = a.head_dim;
  if (a.seq_num_tokens[seq] == 0) return;
  const float* parts = a.split_workspace + (int64_t{seq} * a.num_heads + head) * num_splits * (hd + 2);
  float max_m = -INFINITY;
  for (int32_t s = 0; s < num_splits; ++s)
    if (parts[s * (hd + 2) + 1] > 0.0f) max_m = fmaxf(max_m, parts[s * (hd + 2)]);
  float total = 0.0f;
  for (int32_t s = 0; s < num_splits; ++s)
    if (parts[s * (hd + 2) + 1] > 0.0f) total += __expf(parts[s * (hd + 2)] - max_m) * parts[s * (hd + 2) + 1];
  const int64_t token = a.seq_token_begin[seq];
  __nv_bfloat16* out = as_bf16(a.out) + token * a.num_heads * hd + int64_t{head} * hd;
  for (int32_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float sum = 0.0f;
    for (int32_t s = 0; s < num_splits; ++s) {
      const float* p = parts + s * (hd + 2);
      if (p[1] > 0.0f) sum += __expf(p[0] - max_m) * p[2 + d];
    }
    out[d] = __float2bfloat16(sum / total);
  }
}

// ---- Decode: one block per (chunk, kv head, split), all G query heads of
// the kv head at once, so each key and value is read once for the group.
constexpr int kDecodeWarps = 4;

// Scores of one key (a lane's position) against the G scaled queries
// q: [G, hd] in shared memory (every lane reads the same word: a broadcast).
template <int G>
__device__ __forceinline__ void score_key(const uint4* key, const float* q, int32_t hd, float* s) {
#pragma unroll
  for (int h = 0; h < G; ++h) s[h] = 0.0f;
#pragma unroll 8
  for (int32_t piece = 0; piece < hd / 8; ++piece) {
    float k[8];
    unpack_bf16x8(key[piece], k);
#pragma unroll
    for (int h = 0; h < G; ++h) {
      const float4 qa = *reinterpret_cast<const float4*>(q + h * hd + piece * 8);
      const float4 qb = *reinterpret_cast<const float4*>(q + h * hd + piece * 8 + 4);
      s[h] += qa.x * k[0] + qa.y * k[1] + qa.z * k[2] + qa.w * k[3] + qb.x * k[4] + qb.y * k[5] + qb.z * k[6] + qb.w * k[7];
    }
  }
}

// Warp w takes the split's 32-position chunks w, w + 4, ...: lane = position
// while scoring, lane = value dims (pairs lane, lane + 32, ...) while
// accumulating. Then the warps' (max, sum, acc) are merged in shared memory
// into the output (one split) or the split's partial for merge_splits_kernel.
// P: value-dim pairs per lane (head_dim <= 64 P), a template parameter so
// the accumulators stay in registers, as few as the head needs.
template <int G, int P>
__global__ void __launch_bounds__(kDecodeWarps * 32) decode_kernel(AttentionArgs a) {
  extern __shared__ float smem[];  // q [G, hd], then the warps' partials [warps, G, hd + 2]
  const int32_t seq = blockIdx.x;
  if (a.seq_num_tokens[seq] == 0) return;
  const int32_t hd = a.head_dim, kv_head = blockIdx.y, split = blockIdx.z, num_splits = gridDim.z;
  const int32_t seq_len = a.seq_start_pos[seq] + 1;  // the token sees positions [0, seq_len)
  const int32_t split_len = (((seq_len + num_splits - 1) / num_splits) + 31) / 32 * 32;
  const int32_t kv_begin = split * split_len, kv_end = min(kv_begin + split_len, seq_len);
  const int32_t* table = a.block_tables + a.table_begin[seq];
  const int64_t token = a.seq_token_begin[seq], kv_dim = int64_t{a.num_kv_heads} * hd;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float* q = smem;
  for (int32_t i = threadIdx.x; i < G * hd; i += blockDim.x)
    q[i] = a.q[token * a.q_stride + int64_t{kv_head} * G * hd + i] * a.scale;
  __syncthreads();

  const __nv_bfloat16* keys = as_bf16(a.k_cache) + int64_t{kv_head} * hd;
  const __nv_bfloat162* values = reinterpret_cast<const __nv_bfloat162*>(as_bf16(a.v_cache) + int64_t{kv_head} * hd);
  float m[G], l[G], acc[G][2 * P];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    m[h] = -INFINITY, l[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < 2 * P; ++i) acc[h][i] = 0.0f;
  }
  for (int32_t chunk = kv_begin + warp * 32; chunk < kv_end; chunk += kDecodeWarps * 32) {
    const int32_t pos = chunk + lane;
    const bool valid = pos < kv_end;
    const int64_t slot = valid ? int64_t{table[pos / a.block_size]} * a.block_size + pos % a.block_size : 0;
    float s[G], p[G];
    score_key<G>(reinterpret_cast<const uint4*>(keys + slot * kv_dim), q, valid ? hd : 0, s);
#pragma unroll
    for (int h = 0; h < G; ++h) {  // lane 0's position is valid, so m_new is finite
      const float m_new = fmaxf(m[h], warp_max(valid ? s[h] : -INFINITY));
      const float correction = __expf(m[h] - m_new);
      p[h] = valid ? __expf(s[h] - m_new) : 0.0f;
      l[h] = l[h] * correction + warp_sum(p[h]);
      m[h] = m_new;
#pragma unroll
      for (int i = 0; i < 2 * P; ++i) acc[h][i] *= correction;
    }
    const int32_t n = min(32, kv_end - chunk);
#pragma unroll 4
    for (int32_t j = 0; j < n; ++j) {
      const int64_t slot_j = __shfl_sync(0xffffffffu, slot, j);
      float v[2 * P];
#pragma unroll
      for (int i = 0; i < P; ++i) {
        const int32_t pair = lane + 32 * i;
        const float2 f = 2 * pair < hd ? __bfloat1622float2(values[(slot_j * kv_dim) / 2 + pair]) : float2{0.0f, 0.0f};
        v[2 * i] = f.x, v[2 * i + 1] = f.y;
      }
#pragma unroll
      for (int h = 0; h < G; ++h) {
        const float pj = __shfl_sync(0xffffffffu, p[h], j);
#pragma unroll
        for (int i = 0; i < 2 * P; ++i) acc[h][i] += pj * v[i];
      }
    }
  }

  __syncthreads();  // q is read; its space now holds the warps' partials
  const int32_t part_len = hd + 2;
#pragma unroll
  for (int h = 0; h < G; ++h) {
    float* part = smem + (warp * G + h) * part_len;
    if (lane == 0) part[0] = m[h], part[1] = l[h];
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const int32_t d = 2 * (lane + 32 * i);
      if (d < hd) part[2 + d] = acc[h][2 * i], part[3 + d] = acc[h][2 * i + 1];
    }
  }
  __syncthreads();
  for (int32_t idx = threadIdx.x; idx < G * hd; idx += blockDim.x) {
    const int32_t h = idx / hd, d = idx % hd, head = kv_head * G + h;
    float max_m = -INFINITY, total = 0.0f, sum = 0.0f;
    for (int w = 0; w < kDecodeWarps; ++w)
      if (smem[(w * G + h) * part_len + 1] > 0.0f) max_m = fmaxf(max_m, smem[(w * G + h) * part_len]);
    for (int w = 0; w < kDecodeWarps; ++w) {
      const float* part = smem + (w * G + h) * part_len;
      if (part[1] > 0.0f) {
        const float scale = __expf(part[0] - max_m);
        total += scale * part[1];
        sum += scale * part[2 + d];
      }
    }
    if (num_splits == 1) {
      as_bf16(a.out)[token * a.num_heads * hd + int64_t{head} * hd + d] = __float2bfloat16(total > 0.0f ? sum / total : 0.0f);
    } else {
      float* out = a.split_workspace + ((int64_t{seq} * a.num_heads + head) * num_splits + split) * part_len;
      if (d == 0) out[0] = max_m, out[1] = total;
      out[2 + d] = sum;
    }
  }
}

// Launches decode_kernel<G> when the shape fits it: G = 1, 2, 4 or 8 query
// heads per kv head and whole 16-byte key pieces (head_dim % 8 == 0).
bool launch_decode(const AttentionArgs& a, int32_t num_splits, Stream stream) {
  const int32_t group = a.num_heads / a.num_kv_heads;
  if (a.head_dim % 8 != 0) return false;
  const dim3 grid(static_cast<unsigned>(a.num_seqs), static_cast<unsigned>(a.num_kv_heads),
                  static_cast<unsigned>(num_splits));
  const size_t smem = sizeof(float) * std::max(group * a.head_dim, kDecodeWarps * group * (a.head_dim + 2));
  const int pairs = a.head_dim <= 64 ? 1 : a.head_dim <= 128 ? 2 : 4;
  auto launch_g = [&]<int G>() {
    switch (pairs) {
      case 1: decode_kernel<G, 1><<<grid, kDecodeWarps * 32, smem, stream>>>(a); break;
      case 2: decode_kernel<G, 2><<<grid, kDecodeWarps * 32, smem, stream>>>(a); break;
      default: decode_kernel<G, 4><<<grid, kDecodeWarps * 32, smem, stream>>>(a); break;
    }
    return true;
  };
  switch (group) {
    case 1: return launch_g.template operator()<1>();
    case 2: return launch_g.template operator()<2>();
    case 4: return launch_g.template operator()<4>();
    case 8: return launch_g.template operator()<8>();
    default: return false;
  }
}

Status launch(const AttentionArgs& a, int32_t num_tiles, int32_t num_splits, Stream stream) {
  if (a.head_dim > kAttentionMaxHeadDim || a.head_dim % 2 != 0)
    return unimplemented("CUDA attention supports even head_dim up to ", kAttentionMaxHeadDim, ", got ", a.head_dim);
  const size_t smem = shared_bytes(a.head_dim);
  // Above 48 KB a block's dynamic shared memory must be allowed explicitly.
  static const cudaError_t raised = cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                         static_cast<int>(shared_bytes(kAttentionMaxHeadDim)));
  ZL_CUDA_RETURN_IF_ERROR(raised);
  dim3 grid(static_cast<unsigned>(num_tiles), static_cast<unsigned>(a.num_seqs),
            static_cast<unsigned>(a.num_kv_heads * num_splits));
  attention_kernel<<<grid, kThreads, smem, stream>>>(a);
  return check_launch("attention_kernel");
}

}  // namespace

Status attention_prefill(const AttentionArgs& args, int32_t max_tokens_per_seq, Stream stream) {
  if (args.num_seqs == 0 || max_tokens_per_seq == 0) return ok_status();
  const int32_t group = args.num_heads / args.num_kv_heads;
  const int32_t num_tiles = static_cast<int32_t>(ceil_div(int64_t{max_tokens_per_seq} * group, kRows));
  return launch(args, num_tiles, 1, stream);
}

Status attention_decode(const AttentionArgs& args, int32_t num_splits, Stream stream) {
  if (args.num_seqs == 0) return ok_status();
  if (launch_decode(args, num_splits, stream)) {
    ZL_RETURN_IF_ERROR(check_launch("decode_kernel"));
  } else {
    const int32_t group = args.num_heads / args.num_kv_heads;
    ZL_RETURN_IF_ERROR(launch(args, static_cast<int32_t>(ceil_div(group, kRows)), num_splits, stream));
  }
  if (num_splits == 1) return ok_status();
  dim3 grid(static_cast<unsigned>(args.num_seqs), static_cast<unsigned>(args.num_heads));
  merge_splits_kernel<<<grid, 64, 0, stream>>>(args, num_splits);
  return check_launch("merge_splits_kernel");
}

}  // namespace zl::cuda
