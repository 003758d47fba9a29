#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/simd_exp.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma,f16c")))

namespace zl::cpu {
namespace {

// The largest head the vector path keeps its accumulator for (on the stack).
constexpr int32_t kMaxVectorHeadDim = 512;

// The first position a token at `pos` attends to.
int32_t first_position(const AttentionArgs& a, int32_t pos) { return a.window > 0 ? std::max(0, pos - a.window + 1) : 0; }

// One head's values at position p of a sequence (its block table `blocks`)
// as f32: in place for an f32 cache, else dequantized into buf [head_dim].
const float* head_values(const AttentionArgs& a, const KvLayout& l, const void* cache, const int32_t* blocks,
                         int32_t p, int32_t kv_head, float* buf) {
  const auto* arena = static_cast<const uint8_t*>(cache);
  const int32_t block = blocks[p / a.block_size], slot = p % a.block_size;
  if (l.dtype == KvCacheDtype::kF32) return reinterpret_cast<const float*>(arena + l.value_offset(block, kv_head, slot));
  load_kv_head(l, arena, block, slot, kv_head, buf);
  return buf;
}

// The scalar reference for one (token, head): online softmax one position at
// a time. scratch: [3, head_dim] (accumulator, one key, one value).
void attend_one_scalar(const AttentionArgs& a, const KvLayout& l, int64_t token, int32_t head, float* scratch) {
  const int32_t kv_head = head / (a.num_heads / a.num_kv_heads);
  const float* q = a.q + (token * a.num_heads + head) * a.head_dim;
  const int32_t* blocks = a.block_tables[token];
  const int32_t pos = a.positions[token];
  float* acc = scratch;
  float* k_buf = scratch + a.head_dim;
  float* v_buf = scratch + 2 * a.head_dim;

  float max_score = -INFINITY, sum = 0.0f;
  for (int32_t d = 0; d < a.head_dim; ++d) acc[d] = 0.0f;
  for (int32_t p = first_position(a, pos); p <= pos; ++p) {
    const float* k = head_values(a, l, a.k_cache, blocks, p, kv_head, k_buf);
    const float* v = head_values(a, l, a.v_cache, blocks, p, kv_head, v_buf);
    float score = dot_f32(q, k, a.head_dim) * a.scale;
    if (a.softcap > 0.0f) score = a.softcap * std::tanh(score / a.softcap);
    if (score > max_score) {
      // Rescale what was accumulated under the old maximum.
      float correction = std::exp(max_score - score);
      sum *= correction;
      for (int32_t d = 0; d < a.head_dim; ++d) acc[d] *= correction;
      max_score = score;
    }
    float weight = std::exp(score - max_score);
    sum += weight;
    for (int32_t d = 0; d < a.head_dim; ++d) acc[d] += weight * v[d];
  }
  float* out = a.out + (token * a.num_heads + head) * a.head_dim;
  for (int32_t d = 0; d < a.head_dim; ++d) out[d] = acc[d] / sum;
}

ZL_AVX512 inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

// Lane j = the sum of the 16 lanes of v[j]: a transpose by halves (each
// level adds pairs and halves the lanes per vector), then one permute.
ZL_AVX512 inline __m512 sum16(const __m512* v) {
  __m512 w[8], u[4], z[2];
  for (int i = 0; i < 8; ++i)  // keys 2i, 2i+1: 8 lanes each
    w[i] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; ++i)  // keys 4i..4i+3: 4 lanes each, one per 128-bit quarter
    u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(w[2 * i], w[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i)  // 2 lanes each
    z[i] = _mm512_add_ps(_mm512_unpacklo_ps(u[2 * i], u[2 * i + 1]), _mm512_unpackhi_ps(u[2 * i], u[2 * i + 1]));
  const __m512 sums = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(z[0]), _mm512_castps_pd(z[1]))),
                                    _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(z[0]), _mm512_castps_pd(z[1]))));
  // Lane 4k + m now holds key 4m + k.
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  return _mm512_permutexvar_ps(order, sums);
}

// A head_dim-wide row slice d..d+15: unmasked when the head is a whole
// number of vectors (HD16 > 0, so loads fold into the FMAs), else masked at the tail.
template <int HD16>
ZL_AVX512 inline __m512 load_d(const float* p, int32_t d, int32_t hd) {
  if constexpr (HD16 > 0) {
    return _mm512_loadu_ps(p + d);
  } else {
    return _mm512_maskz_loadu_ps(tail_mask(hd - d), p + d);
  }
}

// Values d = 16i .. 16i + 15 of one head at one position, as f32: `values`
// is its first value, `scales` its first f16 scale (8-bit formats; scale
// i / 2 covers d). Unmasked when HD16 > 0,
// masked at the tail of the head otherwise. Each element is the same f32 as
// load_kv_head gives: f16 and bf16 convert exactly; an e4m3 code's bits
// placed in an f16 read as the code's value x 2^-8 (normal and subnormal
// alike), so it is multiplied by scale x 2^8, an exact power-of-two shift.
template <KvCacheDtype D, int HD16>
ZL_AVX512 inline __m512 load_kv(const uint8_t* values, const uint8_t* scales, int32_t i, int32_t hd) {
  if constexpr (D == KvCacheDtype::kF32) {
    return load_d<HD16>(reinterpret_cast<const float*>(values), 16 * i, hd);
  } else if constexpr (D == KvCacheDtype::kF16 || D == KvCacheDtype::kBF16) {
    const uint8_t* p = values + 32 * i;
    const __m256i h = HD16 > 0 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                               : _mm256_maskz_loadu_epi16(tail_mask(hd - 16 * i), p);
    if constexpr (D == KvCacheDtype::kF16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    uint16_t stored;
    std::memcpy(&stored, scales + 2 * (i / 2), 2);
    const uint8_t* p = values + 16 * i;
    const __m128i codes = HD16 > 0 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))
                                   : _mm_maskz_loadu_epi8(tail_mask(hd - 16 * i), p);
    if constexpr (D == KvCacheDtype::kQ8_0) {
      return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes)), _mm512_set1_ps(f16_to_f32(stored)));
    } else {
      const __m256i b = _mm256_cvtepu8_epi16(codes);
      const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8),
                                        _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7f)), 7));
      return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(f16_to_f32(stored) * 256.0f));
    }
  }
}

// Where the keys and values of positions [p0, p0 + n) of one sequence (n <=
// 16) are, at the head `kv_head`: values and scales of each; positions past
// n repeat p0 (readable; their scores are masked off). With blocks a
// multiple of 16 positions (the default 16) a chunk never straddles two.
struct ChunkRows {
  const uint8_t* k[16];
  const uint8_t* v[16];
  const uint8_t* k_scales[16];
  const uint8_t* v_scales[16];
};

ZL_AVX512 inline void chunk_rows(const AttentionArgs& a, const KvLayout& l, const int32_t* blocks, int32_t p0,
                                 int32_t n, int32_t kv_head, ChunkRows& r) {
  const auto* k_cache = static_cast<const uint8_t*>(a.k_cache);
  const auto* v_cache = static_cast<const uint8_t*>(a.v_cache);
  if (a.block_size % 16 == 0) {  // one block: offsets step by one position's values and scales
    const int32_t block = blocks[p0 / a.block_size], slot0 = p0 % a.block_size;
    const int64_t values = l.value_offset(block, kv_head, slot0), scales = l.scale_offset(block, kv_head, slot0);
    const int64_t value_step = int64_t{l.head_dim} * l.value_bytes, scale_step = int64_t{l.scales_per_head} * 2;
    for (int32_t j = 0; j < 16; ++j) {
      const int32_t jj = j < n ? j : 0;
      r.k[j] = k_cache + values + jj * value_step;
      r.v[j] = v_cache + values + jj * value_step;
      r.k_scales[j] = k_cache + scales + jj * scale_step;
      r.v_scales[j] = v_cache + scales + jj * scale_step;
    }
    return;
  }
  for (int32_t j = 0; j < 16; ++j) {
    const int32_t p = p0 + (j < n ? j : 0);
    const int32_t block = blocks[p / a.block_size], slot = p % a.block_size;
    r.k[j] = k_cache + l.value_offset(block, kv_head, slot);
    r.v[j] = v_cache + l.value_offset(block, kv_head, slot);
    r.k_scales[j] = k_cache + l.scale_offset(block, kv_head, slot);
    r.v_scales[j] = v_cache + l.scale_offset(block, kv_head, slot);
  }
}

// NQ heads of one token that share a KV head (grouped-query attention) with
// AVX-512: positions in chunks of 16, each chunk's scores as one vector per
// head, the running max and sum updated once per chunk (the same online
// softmax, coarser), exp vectorized. The heads share the chunk's rows and
// each V load (up to 4 FMAs per load instead of 1), and their independent
// chains keep the FMA units busy. Each head's arithmetic is the same f32
// operations in the same order as with NQ = 1 and depends only on its own
// token's positions, so results depend neither on the batch nor on NQ.
// HD16 = head_dim / 16 for the common heads (64, 128): the queries and the
// output accumulators [NQ, head_dim] then live in registers and K loads feed
// FMAs directly, about half the instructions of the general case (HD16 = 0,
// NQ = 1). Both do the same f32 operations in the same order per lane.
template <KvCacheDtype D, int HD16, int NQ>
ZL_AVX512 void attend_avx512(const AttentionArgs& a, const KvLayout& l, int64_t token, int32_t head0) {
  static_assert(HD16 > 0 || NQ == 1, "the general head size runs one head at a time");
  constexpr int kVecs = HD16 > 0 ? HD16 : kMaxVectorHeadDim / 16;
  const int32_t hd = a.head_dim;
  const int32_t nv = HD16 > 0 ? HD16 : (hd + 15) / 16;
  const int32_t kv_head = head0 / (a.num_heads / a.num_kv_heads);
  const int32_t* blocks = a.block_tables[token];
  const int32_t pos = a.positions[token];
  __m512 qv[NQ][kVecs], acc[NQ][kVecs];
  float max_score[NQ], sum[NQ];
  for (int h = 0; h < NQ; ++h) {
    const float* q = a.q + (token * a.num_heads + head0 + h) * hd;
    for (int32_t i = 0; i < nv; ++i) {
      qv[h][i] = load_d<HD16>(q, 16 * i, hd);
      acc[h][i] = _mm512_setzero_ps();
    }
    max_score[h] = -INFINITY;
    sum[h] = 0.0f;
  }
  // Chunks start at multiples of 16 (chunk_rows relies on it); with a
  // window, the first chunk's positions before the window are masked off.
  const int32_t first = first_position(a, pos);
  for (int32_t p0 = first / 16 * 16; p0 <= pos; p0 += 16) {
    const int32_t n = std::min(16, pos + 1 - p0);
    const int32_t j0 = std::max(0, first - p0);  // the chunk's first position inside the window
    ChunkRows rows;
    chunk_rows(a, l, blocks, p0, n, kv_head, rows);
    const __mmask16 valid = static_cast<__mmask16>(tail_mask(n) & ~tail_mask(j0));
    alignas(64) float weights[NQ][16];
    __m512 dots[NQ][16];
    for (int h = 0; h < NQ; ++h)
      for (__m512& d : dots[h]) d = _mm512_setzero_ps();
    // dots[h][j] lane l = sum over i of q[16i + l] x K[j][16i + l], i ascending in
    // both loop orders (registers: rows outer, so each row pointer is read once).
    if constexpr (HD16 > 0) {
      for (int32_t j = 0; j < 16; ++j)
        for (int32_t i = 0; i < HD16; ++i) {
          const __m512 kj = load_kv<D, HD16>(rows.k[j], rows.k_scales[j], i, hd);
          for (int h = 0; h < NQ; ++h) dots[h][j] = _mm512_fmadd_ps(qv[h][i], kj, dots[h][j]);
        }
    } else {
      for (int32_t i = 0; i < nv; ++i)
        for (int32_t j = 0; j < 16; ++j)
          dots[0][j] = _mm512_fmadd_ps(qv[0][i], load_kv<D, HD16>(rows.k[j], rows.k_scales[j], i, hd), dots[0][j]);
    }
    for (int h = 0; h < NQ; ++h) {
      const __m512 sv = _mm512_mask_mul_ps(_mm512_set1_ps(-INFINITY), valid, sum16(dots[h]), _mm512_set1_ps(a.scale));
      const float chunk_max = _mm512_reduce_max_ps(sv);
      if (chunk_max > max_score[h]) {
        // Rescale what was accumulated under the old maximum (nothing yet on the first chunk).
        if (sum[h] > 0.0f) {
          const float correction = std::exp(max_score[h] - chunk_max);
          sum[h] *= correction;
          for (int32_t i = 0; i < nv; ++i) acc[h][i] = _mm512_mul_ps(acc[h][i], _mm512_set1_ps(correction));
        }
        max_score[h] = chunk_max;
      }
      const __m512 w = _mm512_maskz_mov_ps(valid, exp_avx512(_mm512_sub_ps(sv, _mm512_set1_ps(max_score[h]))));
      sum[h] += _mm512_reduce_add_ps(w);
      _mm512_store_ps(weights[h], w);
    }
    // acc[h][i] += weights[h][j] x V[j] for j = 0, 1, ..: position by position
    // in both loop orders (registers: positions outer; memory: vectors outer).
    // Positions before the window are not read (their weights are 0).
    if constexpr (HD16 > 0) {
      for (int32_t j = j0; j < n; ++j)
        for (int32_t i = 0; i < HD16; ++i) {
          const __m512 vj = load_kv<D, HD16>(rows.v[j], rows.v_scales[j], i, hd);
          for (int h = 0; h < NQ; ++h) acc[h][i] = _mm512_fmadd_ps(_mm512_set1_ps(weights[h][j]), vj, acc[h][i]);
        }
    } else {
      for (int32_t i = 0; i < nv; ++i)
        for (int32_t j = j0; j < n; ++j)
          acc[0][i] = _mm512_fmadd_ps(_mm512_set1_ps(weights[0][j]), load_kv<D, HD16>(rows.v[j], rows.v_scales[j], i, hd),
                                      acc[0][i]);
    }
  }
  for (int h = 0; h < NQ; ++h) {
    float* out = a.out + (token * a.num_heads + head0 + h) * hd;
    const __m512 inv = _mm512_set1_ps(1.0f / sum[h]);
    for (int32_t i = 0; i < nv; ++i)
      _mm512_mask_storeu_ps(out + 16 * i, tail_mask(hd - 16 * i), _mm512_mul_ps(acc[h][i], inv));
  }
}

// Work items run head by head (one head's keys and values, [positions,
// head_dim], stay in L2 while every token reads them) and, within a head, in
// token order 0, n-1, 1, n-2, ... so that any contiguous share of the items
// carries about equal causal work in a prefill (token t attends to t+1 positions).
int64_t zigzag_token(int64_t i, int64_t num_tokens) { return i % 2 == 0 ? i / 2 : num_tokens - 1 - i / 2; }


// Heads per work item: the most (up to what the registers hold: the
// queries and accumulators take 16 vectors) that divide a KV head's group,
// so an item's heads share that KV head.
int32_t heads_per_item(const AttentionArgs& a, bool vector) {
  const int32_t group = a.num_heads / a.num_kv_heads;
  const int32_t most = !vector ? 1 : a.head_dim == 64 ? 4 : a.head_dim == 128 ? 2 : 1;
  int32_t nq = most;
  while (group % nq != 0) --nq;
  return nq;
}

template <KvCacheDtype D, int HD16>
ZL_AVX512 void attend_heads_avx512(const AttentionArgs& a, const KvLayout& l, int64_t token, int32_t head0,
                                   int32_t nq) {
  if constexpr (HD16 == 0) {
    attend_avx512<D, 0, 1>(a, l, token, head0);
  } else {
    switch (nq) {
      case 4: if constexpr (HD16 <= 4) return attend_avx512<D, HD16, 4>(a, l, token, head0); break;
      case 3: if constexpr (HD16 <= 4) return attend_avx512<D, HD16, 3>(a, l, token, head0); break;
      case 2: return attend_avx512<D, HD16, 2>(a, l, token, head0);
      default: return attend_avx512<D, HD16, 1>(a, l, token, head0);
    }
  }
}

template <KvCacheDtype D>
ZL_AVX512 void attend_item_avx512(const AttentionArgs& a, const KvLayout& l, int64_t token, int32_t head0,
                                  int32_t nq) {
  switch (a.head_dim) {
    case 64: return attend_heads_avx512<D, 4>(a, l, token, head0, nq);
    case 128: return attend_heads_avx512<D, 8>(a, l, token, head0, nq);
    default: return attend_heads_avx512<D, 0>(a, l, token, head0, nq);
  }
}

// The vector path for the cache's format.
void attend_vector(const AttentionArgs& a, const KvLayout& l, int64_t token, int32_t head0, int32_t nq) {
  switch (l.dtype) {
    case KvCacheDtype::kAuto:
    case KvCacheDtype::kF32: return attend_item_avx512<KvCacheDtype::kF32>(a, l, token, head0, nq);
    case KvCacheDtype::kF16: return attend_item_avx512<KvCacheDtype::kF16>(a, l, token, head0, nq);
    case KvCacheDtype::kBF16: return attend_item_avx512<KvCacheDtype::kBF16>(a, l, token, head0, nq);
    case KvCacheDtype::kFp8: return attend_item_avx512<KvCacheDtype::kFp8>(a, l, token, head0, nq);
    case KvCacheDtype::kQ8_0: return attend_item_avx512<KvCacheDtype::kQ8_0>(a, l, token, head0, nq);
  }
}

}  // namespace

void attention_f32(ThreadPool& pool, const AttentionArgs& args, Isa isa) {
  // Soft-capped scores (Gemma 2) take the scalar path: the vector one has no tanh.
  const bool vector = isa == Isa::kAvx512 && args.head_dim <= kMaxVectorHeadDim && args.softcap == 0.0f;
  const int32_t nq = heads_per_item(args, vector);
  const int64_t num_items = args.num_tokens * (args.num_heads / nq);
  const KvLayout layout =
      kv_layout(args.kv_dtype, args.num_kv_heads, args.head_dim, args.block_size, args.kv_num_blocks);
  auto items = [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(3 * args.head_dim));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t token = zigzag_token(item % args.num_tokens, args.num_tokens);
      const auto head0 = static_cast<int32_t>(item / args.num_tokens) * nq;
      if (vector) {
        attend_vector(args, layout, token, head0, nq);
      } else {
        attend_one_scalar(args, layout, token, head0, scratch.data());
      }
    }
  };
  // Small work (short contexts, tiny heads) is cheaper inline than woken workers.
  int64_t max_pos = 0;
  for (int64_t t = 0; t < args.num_tokens; ++t) max_pos = std::max<int64_t>(max_pos, args.positions[t]);
  if (num_items * nq * (max_pos + 1) * args.head_dim < (1 << 16)) return items(0, num_items);
  // Eight parts per thread: a thread slowed by other work on its core hands
  // the rest of its share to the others (a prefill layer's attention is
  // ~10-20 ms of work).
  pool.parallel_for(num_items, items, 1, 8);
}

}  // namespace zl::cpu
