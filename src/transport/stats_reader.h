// Reads a server's stats region (zerolayer/stats_protocol.h) from any local
// process, without the server's help: attach to its shared-memory segment
// read-only, check that a live server owns it and that the region has this
// build's layout, then copy consistent snapshots, each section under its
// seqlock. Everything read is untrusted: a malformed or short region, or one
// of another version, is an error naming the field; a record whose counts
// exceed their capacities is dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zerolayer/histogram.h"
#include "zerolayer/stats_protocol.h"
#include "zerolayer/status.h"

namespace zl {

struct StatsSnapshot {
  zl_stats_config config{};
  zl_stats_counters counters{};
  std::vector<Histogram> histograms;           // [ZL_STATS_NUM_HISTOGRAMS]
  std::vector<zl_stats_signature> signatures;  // most hits first
  std::vector<zl_stats_request> requests;      // oldest first
  uint64_t num_requests_dropped = 0;           // records skipped: malformed, or overwritten while read
  uint64_t read_ns = 0;                        // CLOCK_MONOTONIC when read
};

// Ok if the `bytes` at `region` hold a stats region of this build's version and layout.
Status check_stats_region(const void* region, uint64_t bytes);
// A consistent copy of each section of a region that passed check_stats_region.
StatusOr<StatsSnapshot> read_stats_region(const void* region);

class StatsReader {
 public:
  // Maps segment `name` (as serve's --shm-name) read-only and checks it: a
  // zerolayer segment of this protocol version, a live server, a stats region.
  static StatusOr<std::unique_ptr<StatsReader>> open(const std::string& name);
  ~StatsReader();
  StatsReader(const StatsReader&) = delete;
  StatsReader& operator=(const StatsReader&) = delete;

  // Fails once the server has stopped or died.
  StatusOr<StatsSnapshot> read() const;

 private:
  StatsReader() = default;
  std::string name_;
  void* header_ = nullptr;  // the segment's first page
  void* region_ = nullptr;
  uint64_t region_bytes_ = 0;
};

}  // namespace zl
