// This machine's dot-product peaks: the compute ceiling of a batched decode
// step, as bandwidth_probe.h gives its memory ceiling. Every thread of the
// model's ThreadPool (the calling thread included) runs kChains independent
// accumulator chains of one instruction for a fixed count, all threads at
// once:
//   int8: vpdpbusd (AVX512-VNNI), 64 multiply-adds of u8 x s8 per instruction,
//     what the Q8_0 / Q4_0 / k-quant kernels issue;
//   bf16: vdpbf16ps (AVX512-BF16), 32 multiply-adds of bf16 pairs, what the
//     packed bf16 kernels issue.
// Returns 1e9 multiply-adds per second, or 0 where the CPU lacks the
// instruction.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "core/thread_pool.h"

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

// Multiply-adds per second (1e9) of `loop` on every thread at once, the best
// of 9 passes (~10 ms each: a pass that lost a thread's core to another
// process, or waited for a worker to wake, counts for nothing);
// macs_per_instruction as above.
template <typename Loop>
double peak_gmacs(ThreadPool& pool, Loop loop, int macs_per_instruction) {
  std::atomic<float> sink{0};
  double best = 0;
  for (int pass = 0; pass < 9; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(pool.num_threads(), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) sink.store(loop(kPeakIterations), std::memory_order_relaxed);
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double macs = static_cast<double>(pool.num_threads()) * kPeakIterations * kChains * macs_per_instruction;
    best = std::max(best, macs / seconds / 1e9);
  }
  return best;
}

inline double int8_peak_gmacs(ThreadPool& pool) {
  if (!__builtin_cpu_supports("avx512vnni")) return 0;
  return peak_gmacs(pool, int8_dot_loop, 64);
}

inline double bf16_peak_gmacs(ThreadPool& pool) {
  if (!__builtin_cpu_supports("avx512bf16")) return 0;
  return peak_gmacs(pool, bf16_dot_loop, 32);
}

}  // namespace zl::bench
