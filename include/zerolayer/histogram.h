// A fixed-size latency histogram: log2 buckets with 16 linear sub-buckets
// (about 6% resolution), from 1 ns to ~1000 s. Recording is a few
// instructions and never allocates, so the engine loop can record every step.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace zl {

class Histogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int kNumBuckets = 64 << kSubBits;

  // A histogram with these buckets and totals (as published in a stats region).
  static Histogram from_buckets(std::span<const uint64_t, kNumBuckets> buckets, uint64_t count, uint64_t sum,
                                uint64_t max);

  void record(uint64_t value_ns);
  // The same value `times` times.
  void record(uint64_t value_ns, uint64_t times);
  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  uint64_t sum() const { return sum_; }
  // The value at quantile q in [0, 1] (upper edge of its bucket, capped at max).
  uint64_t quantile(double q) const;
  // Values recorded that are at most `value`, to bucket resolution (values in
  // the bucket holding `value` count when that bucket's upper edge is <= value,
  // so the answer never over-counts): Prometheus cumulative buckets.
  uint64_t count_at_most(uint64_t value) const;
  const std::array<uint64_t, kNumBuckets>& buckets() const { return buckets_; }
  // Buckets [first, last] hold every value recorded (first > last when empty),
  // so a publisher can copy just those.
  int first_used_bucket() const { return count_ ? bucket_of(min_) : 1; }
  int last_used_bucket() const { return count_ ? std::min(bucket_of(max_), kNumBuckets - 1) : 0; }

 private:
  static int bucket_of(uint64_t v);
  static uint64_t bucket_upper(int bucket);
  std::array<uint64_t, kNumBuckets> buckets_{};
  uint64_t count_ = 0, sum_ = 0, max_ = 0, min_ = UINT64_MAX;
};

}  // namespace zl
