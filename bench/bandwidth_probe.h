// This machine's DRAM read bandwidth: num_threads threads stream disjoint
// slices of a buffer much larger than the caches (AVX-512 or AVX2 loads,
// summed so the reads cannot be elided). One call is one timed sweep.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/huge_buffer.h"

namespace zl::bench {

__attribute__((target("avx2"))) inline uint64_t read_slice_avx2(const uint8_t* p, size_t n) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
  for (size_t i = 0; i + 128 <= n; i += 128) {
    acc0 = _mm256_add_epi64(acc0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    acc1 = _mm256_add_epi64(acc1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    acc0 = _mm256_add_epi64(acc0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    acc1 = _mm256_add_epi64(acc1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  acc0 = _mm256_add_epi64(acc0, acc1);
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc0);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

class BandwidthProbe {
 public:
  explicit BandwidthProbe(size_t bytes = size_t{1} << 30) : bytes_(bytes) {
    buf_ = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes_));
    // On 2 MiB pages where the kernel allows it, as the weights are
    // (ModelWeights::allocate_bytes): the same TLB reach as what it is compared with.
    advise_huge_pages(buf_, bytes_);
    std::memset(buf_, 1, bytes_);
  }
  ~BandwidthProbe() { std::free(buf_); }

  // GB/s (1e9 bytes) of one sweep with num_threads threads.
  double sweep(int num_threads) {
    std::vector<std::thread> threads;
    std::vector<uint64_t> sums(static_cast<size_t>(num_threads));
    auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < num_threads; ++t) {
      size_t begin = bytes_ / num_threads * t / 128 * 128, end = bytes_ / num_threads * (t + 1) / 128 * 128;
      threads.emplace_back([&, t, begin, end] { sums[static_cast<size_t>(t)] = read_slice_avx2(buf_ + begin, end - begin); });
    }
    for (auto& th : threads) th.join();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sink_ += sums[0];
    return static_cast<double>(bytes_) / seconds / 1e9;
  }

  uint64_t sink() const { return sink_; }

 private:
  size_t bytes_;
  uint8_t* buf_;
  uint64_t sink_ = 0;
};

struct Summary {
  double min = 0, median = 0, max = 0;
};

inline Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.front(), v[v.size() / 2], v.back()};
}

}  // namespace zl::bench
