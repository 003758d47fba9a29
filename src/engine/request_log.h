// The end of a request's latency breakdown: at its terminal event the engine
// completes the request's record (request_trace.h), adds its phases to the
// phase histograms, and, while a stats region is attached, writes it into the
// region's ring of recent requests under the record's own seqlock.
//
// Engine thread only. No allocation; a record costs one copy into the ring.
#pragma once

#include <cstdint>

#include "engine/histogram.h"
#include "engine/sequence.h"
#include "zerolayer/stats_protocol.h"

namespace zl {

class RequestLog {
 public:
  // `finished`: when the terminal event was decided; `delivered`: when the
  // request's sink returned from on_finish (the transport has it).
  void record(Sequence& seq, FinishReason reason, Clock::time_point finished, Clock::time_point delivered);

  // Where records go from now on (nullptr: nowhere). Positions keep counting.
  void attach(zl_stats_request_ring* ring) { ring_ = ring; }

  int64_t num_traced() const { return static_cast<int64_t>(next_position_); }
  const Histogram& transport_in_ns() const { return transport_in_ns_; }
  const Histogram& admission_ns() const { return admission_ns_; }
  const Histogram& queue_ns() const { return queue_ns_; }
  const Histogram& transport_out_ns() const { return transport_out_ns_; }
  const Histogram& total_ns() const { return total_ns_; }

 private:
  void publish(const zl_stats_request& record);

  zl_stats_request_ring* ring_ = nullptr;
  uint64_t next_position_ = 0;
  Histogram transport_in_ns_, admission_ns_, queue_ns_, transport_out_ns_, total_ns_;
};

}  // namespace zl
