#include "zerolayer/histogram.h"

#include <gtest/gtest.h>

namespace zl {
namespace {

TEST(HistogramTest, QuantilesWithinBucketResolution) {
  Histogram h;
  for (uint64_t v = 1; v <= 10000; ++v) h.record(v * 1000);  // 1 µs .. 10 ms
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_EQ(h.max(), 10000000u);
  auto near = [](uint64_t got, double want) { return got >= want * 0.999 && got <= want * 1.07; };
  EXPECT_TRUE(near(h.quantile(0.5), 5000000.0)) << h.quantile(0.5);
  EXPECT_TRUE(near(h.quantile(0.99), 9900000.0)) << h.quantile(0.99);
  EXPECT_EQ(h.quantile(1.0), h.max());
  EXPECT_NEAR(h.mean(), 5000500.0, 1.0);
}

TEST(HistogramTest, RecordingAValueNTimesEqualsRecordingItNTimesOver) {
  Histogram once, each;
  once.record(700, 5);
  once.record(90000, 3);
  once.record(12, 0);  // nothing
  for (int i = 0; i < 5; ++i) each.record(700);
  for (int i = 0; i < 3; ++i) each.record(90000);
  EXPECT_EQ(once.buckets(), each.buckets());
  EXPECT_EQ(once.count(), 8u);
  EXPECT_EQ(once.sum(), each.sum());
  EXPECT_EQ(once.max(), 90000u);
  EXPECT_EQ(once.first_used_bucket(), each.first_used_bucket());
}

TEST(HistogramTest, CountAtMostIsCumulativeAndNeverOverCounts) {
  Histogram h;
  for (uint64_t v = 1; v <= 1000; ++v) h.record(v * 1000);  // 1 µs .. 1 ms
  EXPECT_EQ(h.count_at_most(0), 0u);
  EXPECT_LE(h.count_at_most(500000), 500u);
  EXPECT_GE(h.count_at_most(500000), 470u);  // within one bucket (~6%)
  EXPECT_EQ(h.count_at_most(UINT64_MAX), 1000u);
  EXPECT_EQ(h.sum(), 500500000u);
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (uint64_t v : {0u, 1u, 3u, 3u, 15u}) h.record(v);
  EXPECT_EQ(h.quantile(0.0), 0u);
  EXPECT_EQ(h.quantile(0.5), 3u);
  EXPECT_EQ(h.quantile(1.0), 15u);
  Histogram empty;
  EXPECT_EQ(empty.quantile(0.5), 0u);
}

TEST(HistogramBuckets, UsedRangeCoversEveryValueAndSurvivesARoundTrip) {
  Histogram h;
  EXPECT_GT(h.first_used_bucket(), h.last_used_bucket());  // empty
  for (uint64_t v : {900ull, 5000ull, 1234567ull}) h.record(v);
  uint64_t inside = 0;
  for (int b = h.first_used_bucket(); b <= h.last_used_bucket(); ++b) inside += h.buckets()[size_t(b)];
  EXPECT_EQ(inside, 3u);
  EXPECT_GT(h.buckets()[size_t(h.first_used_bucket())], 0u);
  EXPECT_GT(h.buckets()[size_t(h.last_used_bucket())], 0u);
  Histogram copy = Histogram::from_buckets(h.buckets(), h.count(), h.sum(), h.max());
  EXPECT_EQ(copy.quantile(0.5), h.quantile(0.5));
  EXPECT_EQ(copy.first_used_bucket(), h.first_used_bucket());
  EXPECT_EQ(copy.last_used_bucket(), h.last_used_bucket());
}

}  // namespace
}  // namespace zl
