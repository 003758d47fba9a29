// This machine's dot-product peaks: the compute ceiling of a batched decode
// step, as bandwidth_probe.h gives its memory ceiling. Every thread of the
// model's ThreadPool (the calling thread included) runs kChains independent
// accumulator chains of one instruction for a fixed count, all threads at
// once:
//   int8: vpdpbusd (AVX512-VNNI), 64 multiply-adds of u8 x s8 per instruction,
//     what the Q8_0 / Q4_0 / k-quant kernels issue;
//   bf16: vdpbf16ps (AVX512-BF16), 32 multiply-adds of bf16 pairs, what the
//     packed bf16 kernels issue without AMX;
//   AMX bf16: tdpbf16ps, 16 x 16 x 32 multiply-adds per instruction into
//     four independent [16, 16] f32 tiles, what the packed bf16 kernel
//     issues on AMX-BF16 (matmul_amx_bf16.cpp).
//   int8 block: vpdpbusd with the float step the int8 formats need per
//     block of 32 (int8_block_loop), their ceiling from the instruction mix.
// Returns 1e9 multiply-adds per second, or 0 where the CPU lacks the
// instruction.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/cpu/immintrin_quiet.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quant_rows_avx512.h"

namespace zl::bench {

constexpr int kChains = 10;              // > latency x throughput of either instruction
constexpr int64_t kPeakIterations = 1 << 22;  // x kChains instructions per thread

__attribute__((target("avx512f,avx512vnni"))) inline float int8_dot_loop(int64_t iterations) {
  __m512i acc[kChains];
  for (__m512i& a : acc) a = _mm512_setzero_si512();
  const __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < iterations; ++i)
    for (__m512i& a : acc) a = _mm512_dpbusd_epi32(a, u, s);
  __m512i sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, acc[c]);
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, sum);
  return static_cast<float>(lanes[0]);
}

// The int8 formats' block: for 16 rows and one token, a block of 32 columns
// is 8 vpdpbusd and a float step on the same two vector ports (Q8_0, Q4_0,
// I8, Q5_0, IQ4: add the two chains, convert, fmsub the activation's
// offset, fmadd the weight scale; Q4_K, Q5_K, Q5_1 one more for the min;
// Q6_K, Q3_K, Q2_K their half-block scales), as each has a scale per 32
// weights. This loop issues format D's block for the decode tile, 2 groups
// x 4 tokens, per iteration, through the kernels' own token_block:
// weights in registers, the activations' codes and scales from a 1 KiB
// table in L1, so nothing but the instruction mix sets its pace. (A single
// chain started at the integer offset, 3 float instructions, ran slower
// here: 8 dependent vpdpbusd outlast the 8 tiles' parallelism.)
constexpr int kBlockTableBlocks = 8;  // the activation table's blocks, cycled through

template <DType D>
ZL_AVX512 inline float int8_block_loop(int64_t iterations) {
  alignas(64) static thread_local int8_t xq[kBlockTableBlocks][4][32];
  alignas(64) static thread_local float xd[kBlockTableBlocks][4], xc[kBlockTableBlocks][4];
  alignas(64) static thread_local int32_t sum16[kBlockTableBlocks][4][2];
  for (int b = 0; b < kBlockTableBlocks; ++b)
    for (int t = 0; t < 4; ++t) {
      for (int j = 0; j < 32; ++j) xq[b][t][j] = static_cast<int8_t>(j - 16 + b + t);
      xd[b][t] = 1.0f / 1024;
      xc[b][t] = 0.25f;
      sum16[b][t][0] = sum16[b][t][1] = b + t;
    }
  __m512i v[2][8];
  for (int g = 0; g < 2; ++g)
    for (int k = 0; k < 8; ++k) v[g][k] = _mm512_set1_epi8(static_cast<char>(100 + 8 * g + k));
  cpu::quant_avx512::BlockScales s[2];
  for (int g = 0; g < 2; ++g) {
    const __m512 scale = _mm512_set1_ps(1.0f / static_cast<float>(512 << g));
    s[g] = {scale, scale, scale, scale};
  }
  __m512 acc[2][4];
  for (auto& a : acc)
    for (__m512& t : a) t = _mm512_setzero_ps();
  for (int64_t i = 0; i < iterations; ++i) {
    const int b = static_cast<int>(i % kBlockTableBlocks);
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) {
      const __m512 dx = _mm512_set1_ps(xd[b][t]), c = _mm512_set1_ps(xc[b][t]);
      const uint8_t* x = reinterpret_cast<const uint8_t*>(xq[b][t]);
#pragma GCC unroll 2
      for (int g = 0; g < 2; ++g)
        acc[g][t] = cpu::quant_avx512::token_block<D>(v[g], s[g], x, sum16[b][t], dx, c, acc[g][t]);
    }
  }
  __m512 sum = _mm512_setzero_ps();
  for (auto& a : acc)
    for (__m512& t : a) sum = _mm512_add_ps(sum, t);
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx512f,avx512bf16"))) inline float bf16_dot_loop(int64_t iterations) {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3c00);  // 1, 2^-7
  for (int64_t i = 0; i < iterations; ++i)
    for (__m512& a : acc) a = _mm512_dpbf16_ps(a, x, y);
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0];
}

__attribute__((target("amx-tile,amx-bf16"))) inline float amx_bf16_dot_loop(int64_t iterations) {
  cpu::amx_load_config(cpu::amx_square_tiles());
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  // iterations / 2 instructions (each 16 cycles or more: ~10 ms a call).
  for (int64_t i = 0; i < iterations / 8; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float sums[16][16];
  _tile_stored(0, sums, 64);
  cpu::amx_stores_done();
  _tile_release();
  return sums[0][0];
}

// Multiply-adds per second (1e9) of `loop` on every thread at once, the best
// of 9 passes (~10 ms each: a pass that lost a thread's core to another
// process, or waited for a worker to wake, counts for nothing);
// macs_per_call: the multiply-adds of loop(kPeakIterations).
template <typename Loop>
double peak_gmacs(ThreadPool& pool, Loop loop, double macs_per_call) {
  std::atomic<float> sink{0};
  double best = 0;
  for (int pass = 0; pass < 9; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(pool.num_threads(), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) sink.store(loop(kPeakIterations), std::memory_order_relaxed);
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double macs = static_cast<double>(pool.num_threads()) * macs_per_call;
    best = std::max(best, macs / seconds / 1e9);
  }
  return best;
}

inline double int8_peak_gmacs(ThreadPool& pool) {
  if (!__builtin_cpu_supports("avx512vnni")) return 0;
  return peak_gmacs(pool, int8_dot_loop, 64.0 * kChains * kPeakIterations);
}

// An int8 format's ceiling from its instruction mix (int8_block_loop<D>;
// the formats of one block form share one): 64 multiply-adds counted per
// vpdpbusd, the float step's instructions for nothing. Iterations: each
// ~48 cycles of 64 vpdpbusd and 32 others (Q8_0's form).
template <DType D>
double int8_block_peak_gmacs(ThreadPool& pool) {
  constexpr int64_t kIterations = kPeakIterations / 16;
  return peak_gmacs(pool, [](int64_t) { return int8_block_loop<D>(kIterations); }, 64.0 * 64 * kIterations);
}
inline double int8_block_peak_gmacs(ThreadPool& pool, DType dtype) {
  if (!__builtin_cpu_supports("avx512vnni")) return 0;
  switch (dtype) {
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ5_1: return int8_block_peak_gmacs<DType::kQ4_K>(pool);
    case DType::kQ6_K: return int8_block_peak_gmacs<DType::kQ6_K>(pool);
    case DType::kQ3_K: return int8_block_peak_gmacs<DType::kQ3_K>(pool);
    case DType::kQ2_K: return int8_block_peak_gmacs<DType::kQ2_K>(pool);
    case DType::kI8: return int8_block_peak_gmacs<DType::kI8>(pool);
    default: return int8_block_peak_gmacs<DType::kQ8_0>(pool);  // Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS
  }
}

inline double bf16_peak_gmacs(ThreadPool& pool) {
  if (!__builtin_cpu_supports("avx512bf16")) return 0;
  return peak_gmacs(pool, bf16_dot_loop, 32.0 * kChains * kPeakIterations);
}

// Needs cpu::amx_bf16_supported() (which has Linux grant the tile state).
inline double amx_bf16_peak_gmacs(ThreadPool& pool) {
  return peak_gmacs(pool, amx_bf16_dot_loop, 16.0 * 16 * 32 * (kPeakIterations / 8 * 4));
}

}  // namespace zl::bench
