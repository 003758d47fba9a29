// SpinPolicy: how long a response-ring consumer spins, from the record
// intervals it has seen and the preemptions it has suffered. Times in ns.
#include "transport/spin_policy.h"

#include <gtest/gtest.h>

namespace zl::shm {
namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kT0 = 1'000'000'000;  // an arbitrary CLOCK_MONOTONIC origin

SpinPolicy policy(uint64_t fixed_us, uint64_t adaptive_us) {
  SpinPolicy p;
  p.set_fixed_ns(fixed_us * kUs);
  p.set_adaptive_ns(adaptive_us * kUs);
  return p;
}

// Records of one stream every `gap_us`, the last at kT0.
void feed(SpinPolicy& p, int num_records, uint64_t gap_us) {
  for (int i = num_records - 1; i >= 0; --i) p.on_record(kT0 - uint64_t(i) * gap_us * kUs, false);
}

TEST(SpinPolicyTest, FixedSpinWithoutAnInterval) {
  SpinPolicy p = policy(20, 250);
  EXPECT_EQ(p.spin_deadline(kT0), kT0 + 20 * kUs);
  p.on_record(kT0, false);  // one record: still no interval
  EXPECT_EQ(p.spin_deadline(kT0 + kUs), kT0 + 21 * kUs);
}

TEST(SpinPolicyTest, SpinsThroughAShortSteadyInterval) {
  SpinPolicy p = policy(20, 250);
  feed(p, 5, 100);
  EXPECT_EQ(p.gap_ns(), 100 * kUs);
  // Due two intervals after the last record.
  EXPECT_EQ(p.spin_deadline(kT0 + 5 * kUs), kT0 + 200 * kUs);
  // Already past that: one more interval from now.
  EXPECT_EQ(p.spin_deadline(kT0 + 300 * kUs), kT0 + 400 * kUs);
}

TEST(SpinPolicyTest, SleepsAfterABurstWhenTheIntervalIsLong) {
  SpinPolicy p = policy(20, 250);
  feed(p, 5, 1000);  // due 2 ms after the last: beyond the 250 us bound
  EXPECT_EQ(p.spin_deadline(kT0 + kUs), kT0 + kUs + SpinPolicy::kBurstSpinNs);
  // A fixed spin shorter than a burst's is kept.
  SpinPolicy short_fixed = policy(1, 250);
  feed(short_fixed, 5, 1000);
  EXPECT_EQ(short_fixed.spin_deadline(kT0 + kUs), kT0 + 2 * kUs);
}

// Within a stream of 100 us intervals: the fixed spin is a floor, and an
// adaptive bound of 0 leaves only it.
TEST(SpinPolicyTest, FixedSpinIsTheFloorAndAdaptiveZeroLeavesOnlyIt) {
  struct Case {
    uint64_t fixed_us, adaptive_us, deadline_us;  // deadline after the last record
  };
  for (Case c : {Case{20, 250, 200}, Case{500, 2000, 501}, Case{20, 0, 21}}) {
    SpinPolicy p = policy(c.fixed_us, c.adaptive_us);
    feed(p, 5, 100);
    EXPECT_EQ(p.spin_deadline(kT0 + kUs), kT0 + c.deadline_us * kUs) << c.fixed_us << " " << c.adaptive_us;
  }
}

TEST(SpinPolicyTest, MeanIntervalWeighsEachRecordAnEighth) {
  SpinPolicy p = policy(20, 250);
  feed(p, 3, 100);
  p.on_record(kT0 + 900 * kUs, false);
  EXPECT_EQ(p.gap_ns(), 100 * kUs - 100 * kUs / 8 + 900 * kUs / 8);
  p.on_record(kT0 + 800 * kUs, false);  // out of order (a clock step): ignored
  EXPECT_EQ(p.gap_ns(), 100 * kUs - 100 * kUs / 8 + 900 * kUs / 8);
}

TEST(SpinPolicyTest, TerminalRecordEndsTheStream) {
  SpinPolicy p = policy(20, 250);
  feed(p, 5, 100);
  p.on_record(kT0 + 100 * kUs, true);
  // The next request starts with a prefill: back to the fixed spin, and the
  // gap from the terminal record to its first token is not an interval.
  EXPECT_EQ(p.spin_deadline(kT0 + 200 * kUs), kT0 + 220 * kUs);
  p.on_record(kT0 + 5000 * kUs, false);
  EXPECT_EQ(p.gap_ns(), 100 * kUs);
}

TEST(SpinPolicyTest, PreemptionBacksOffDoublingThenHalves) {
  SpinPolicy p = policy(20, 250);
  feed(p, 5, 100);
  p.on_preempted(kT0);
  EXPECT_EQ(p.backoff_ns(), SpinPolicy::kBackoffMinNs);
  // Within the backoff: only a burst's spin, then sleep.
  EXPECT_EQ(p.spin_deadline(kT0 + kUs), kT0 + kUs + SpinPolicy::kBurstSpinNs);
  // After it: spinning through the interval again (the record is late by
  // now, so one more interval from now).
  uint64_t later = kT0 + SpinPolicy::kBackoffMinNs;
  EXPECT_EQ(p.spin_deadline(later), later + 100 * kUs);
  p.on_preempted(later);
  EXPECT_EQ(p.backoff_ns(), 2 * SpinPolicy::kBackoffMinNs);
  for (int i = 0; i < 40; ++i) p.on_preempted(later);
  EXPECT_EQ(p.backoff_ns(), SpinPolicy::kBackoffMaxNs);
  for (uint32_t i = 0; i + 1 < SpinPolicy::kCleanSpinsToHalve; ++i) p.on_clean_spin();
  EXPECT_EQ(p.backoff_ns(), SpinPolicy::kBackoffMaxNs);
  p.on_clean_spin();
  EXPECT_EQ(p.backoff_ns(), SpinPolicy::kBackoffMaxNs / 2);
}

// More runnable threads than CPUs: spinning would take a CPU from them.
TEST(SpinPolicyTest, NoAdaptiveSpinWhileTheCpusAreBusy) {
  SpinPolicy p = policy(20, 250);
  feed(p, 5, 100);
  p.set_cpus_busy(true);
  EXPECT_EQ(p.spin_deadline(kT0 + kUs), kT0 + kUs + SpinPolicy::kBurstSpinNs);
  p.set_cpus_busy(false);
  EXPECT_EQ(p.spin_deadline(kT0 + kUs), kT0 + 200 * kUs);
}

TEST(SpinPolicyTest, RunnableThreadsFromLoadavg) {
  EXPECT_EQ(runnable_from_loadavg("0.52 0.58 0.59 3/467 12345\n"), 3);
  EXPECT_EQ(runnable_from_loadavg("17.04 15.58 11.08 21/310 9"), 21);
  EXPECT_EQ(runnable_from_loadavg("0.52 0.58 0.59"), -1);
  EXPECT_EQ(runnable_from_loadavg("0.52 0.58 0.59 /467 1"), -1);
  EXPECT_EQ(runnable_from_loadavg("0.52 0.58 0.59 x/467 1"), -1);
  EXPECT_EQ(runnable_from_loadavg("0.52 0.58 0.59 12345678901/4 1"), -1);
}

}  // namespace
}  // namespace zl::shm
