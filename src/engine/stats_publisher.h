// Publishes the engine's statistics into a stats region laid out by
// zerolayer/stats_protocol.h, so that any local process can watch the engine
// without asking it anything. Created on any thread (it formats the region
// and writes the configuration before the engine sees it), then owned and
// driven by the engine thread alone.
//
// Cost on the engine loop: while the engine works, a publish cycle starts at
// most every ZL_STATS_PUBLISH_PERIOD_NS and then publishes one section per
// step (the counters, one histogram's buckets in use, or the signature
// table: one bounded copy, no clock read, no allocation); when the engine is about to
// sleep it publishes every section that changed, which costs no step
// anything. Request records are written by the engine's RequestLog as
// requests finish.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "zerolayer/histogram.h"
#include "zerolayer/stats_protocol.h"
#include "zerolayer/status.h"

namespace zl {

class EngineCore;

// One histogram section: `h` copied in under the section's seqlock. Copies
// only the buckets `h` uses, so `out` must only ever receive `h` (or nothing).
void write_histogram_section(zl_stats_histogram& out, const Histogram& h, int64_t now_ns);

class StatsPublisher {
 public:
  // Formats `region` (bytes long, 8-byte aligned; its old contents are
  // overwritten) with `config` as the configuration section. Readers see a
  // valid region once this returns (the magic is stored last).
  static StatusOr<std::unique_ptr<StatsPublisher>> create(void* region, size_t bytes, const zl_stats_config& config);

  // Engine thread: start publishing `core` (its request log writes the ring).
  void attach(EngineCore& core);
  // Engine thread: publishes what changed one last time, then stops;
  // afterwards nothing here or in `core` touches the region.
  void detach(EngineCore& core);

  const void* region() const { return region_; }

  // Engine thread, after each step.
  void after_step(const EngineCore& core);
  // Engine thread, when it has no work and is about to wait.
  void before_idle(const EngineCore& core);

 private:
  static constexpr int kNumSections = 2 + ZL_STATS_NUM_HISTOGRAMS;  // counters, histograms, signatures

  explicit StatsPublisher(zl_stats_region* region) : region_(region) {}
  // Publishes section `index` (0: counters, 1..: histograms, last:
  // signatures) unless it is a histogram or the signature table that has not
  // changed since it was last published.
  void publish_section(const EngineCore& core, int index, int64_t now_ns);
  void publish_counters(const EngineCore& core, int64_t now_ns);
  void publish_signatures(const EngineCore& core, int64_t now_ns);

  zl_stats_region* region_;
  int next_section_ = -1;              // inside a cycle: the section due at the next step
  int64_t cycle_started_ns_ = 0;
  // What was last published (counts only ever grow): histograms' counts, and
  // the signature table's admissions.
  std::array<uint64_t, ZL_STATS_NUM_HISTOGRAMS> published_counts_{};
  int64_t published_queries_ = -1;
};

}  // namespace zl
