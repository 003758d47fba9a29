#include "zerolayer/histogram.h"

#include <algorithm>

namespace zl {

int Histogram::bucket_of(uint64_t v) {
  if (v < (1u << kSubBits)) return static_cast<int>(v);
  int log2 = 63 - __builtin_clzll(v);
  int sub = static_cast<int>((v >> (log2 - kSubBits)) & ((1u << kSubBits) - 1));
  return ((log2 - kSubBits + 1) << kSubBits) + sub;
}

uint64_t Histogram::bucket_upper(int bucket) {
  if (bucket < (1 << kSubBits)) return static_cast<uint64_t>(bucket);
  int log2 = (bucket >> kSubBits) + kSubBits - 1;
  if (log2 >= 64) return UINT64_MAX;  // the top buckets hold what no uint64_t exceeds
  uint64_t sub = static_cast<uint64_t>(bucket & ((1 << kSubBits) - 1));
  uint64_t base = uint64_t{1} << log2;
  return base + ((sub + 1) << (log2 - kSubBits)) - 1;
}

Histogram Histogram::from_buckets(std::span<const uint64_t, kNumBuckets> buckets, uint64_t count, uint64_t sum,
                                  uint64_t max) {
  Histogram h;
  std::copy(buckets.begin(), buckets.end(), h.buckets_.begin());
  h.count_ = count;
  h.sum_ = sum;
  h.max_ = max;
  for (int b = 0; b < kNumBuckets && count > 0; ++b) {
    if (buckets[size_t(b)] == 0) continue;
    h.min_ = std::min(max, bucket_upper(b));  // to bucket resolution, never above max
    break;
  }
  return h;
}

void Histogram::record(uint64_t value_ns) { record(value_ns, 1); }

void Histogram::record(uint64_t value_ns, uint64_t times) {
  if (times == 0) return;
  buckets_[static_cast<size_t>(std::min(bucket_of(value_ns), kNumBuckets - 1))] += times;
  count_ += times;
  sum_ += value_ns * times;
  max_ = std::max(max_, value_ns);
  min_ = std::min(min_, value_ns);
}

uint64_t Histogram::count_at_most(uint64_t value) const {
  uint64_t n = 0;
  for (int b = 0; b < kNumBuckets && bucket_upper(b) <= value; ++b) n += buckets_[static_cast<size_t>(b)];
  return n;
}

uint64_t Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
  uint64_t seen = 0;
  for (int b = 0; b < kNumBuckets; ++b) {
    seen += buckets_[static_cast<size_t>(b)];
    if (seen >= rank) return std::min(bucket_upper(b), max_);
  }
  return max_;
}

}  // namespace zl
