// This machine's DRAM read bandwidth, measured the way a decode step reads
// its weights: the model's ThreadPool (the calling thread takes part) splits
// each buffer into one contiguous slice per thread, and every slice is
// streamed once with the widest loads the CPU has (AVX-512, else AVX2), summed
// so the reads cannot be elided. One call of sweep() is one timed pass.
//
// Two uses: BandwidthProbe sweeps one buffer far larger than the caches
// (bench/bandwidth); decode_bench sweeps the model's own weight matrices, the
// exact bytes a decode step streams, so "time per token >= weight bytes /
// bandwidth" is measured on the same pages, threads and moment as the step.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/huge_buffer.h"
#include "core/thread_pool.h"

namespace zl::bench {

// Sum of the 64-bit words of p[0, n), 256 bytes per iteration in four
// independent chains (unaligned loads: mapped weights need not be aligned).
__attribute__((target("avx512f"))) inline uint64_t read_bytes_avx512(const uint8_t* p, size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 192));
  }
  // A store, not _mm512_reduce_add_epi64 (GCC 12 warns inside it).
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum += lane;
  for (; i < n; ++i) sum += p[i];
  return sum;
}

__attribute__((target("avx2"))) inline uint64_t read_bytes_avx2(const uint8_t* p, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
  uint64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) sum += p[i];
  return sum;
}

inline uint64_t read_bytes(const uint8_t* p, size_t n) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512 ? read_bytes_avx512(p, n) : read_bytes_avx2(p, n);
}

// Buffers read together in one sweep (a model's weight matrices).
struct ByteSpan {
  const uint8_t* data = nullptr;
  int64_t bytes = 0;
};

class SpanSweep {
 public:
  SpanSweep(ThreadPool& pool, std::vector<ByteSpan> spans) : pool_(pool), spans_(std::move(spans)) {
    for (const ByteSpan& s : spans_) bytes_ += s.bytes;
  }

  int64_t bytes() const { return bytes_; }

  // Seconds of one pass over every span, one parallel_for per span as the
  // forward pass makes one per matrix; each thread's part is whole 64-byte lines.
  double sweep() {
    const auto start = std::chrono::steady_clock::now();
    for (const ByteSpan& s : spans_) {
      const int64_t lines = (s.bytes + 63) / 64;
      pool_.parallel_for(lines, [&](int64_t begin, int64_t end) {
        const int64_t first = begin * 64, last = std::min(end * 64, s.bytes);
        sink_.fetch_add(read_bytes(s.data + first, static_cast<size_t>(last - first)), std::memory_order_relaxed);
      });
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // GB/s (1e9 bytes) of one pass.
  double sweep_gbs() { return static_cast<double>(bytes_) / sweep() / 1e9; }

 private:
  ThreadPool& pool_;
  std::vector<ByteSpan> spans_;
  int64_t bytes_ = 0;
  // Every slice's sum is added here: an atomic the compiler cannot drop, so
  // neither are the loads its value comes from.
  std::atomic<uint64_t> sink_{0};
};

// One buffer of `bytes` (default 1 GiB, far beyond the caches), on 2 MiB pages
// where the kernel allows it, as the weights are (ModelWeights::allocate_bytes).
class BandwidthProbe {
 public:
  explicit BandwidthProbe(ThreadPool& pool, size_t bytes = size_t{1} << 30)
      : buffer_(allocate_huge_buffer(bytes)),
        sweep_(pool, {{static_cast<const uint8_t*>(buffer_.get()), static_cast<int64_t>(bytes)}}) {
    // Touch every page, with non-zero bytes, so no sweep reads the shared zero page.
    if (buffer_ != nullptr) std::memset(buffer_.get(), 1, bytes);
  }

  bool ok() const { return buffer_ != nullptr; }
  double sweep_gbs() { return sweep_.sweep_gbs(); }

 private:
  HugeBuffer buffer_;
  SpanSweep sweep_;
};

struct Summary {
  double min = 0, median = 0, max = 0;
};

inline Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

}  // namespace zl::bench
