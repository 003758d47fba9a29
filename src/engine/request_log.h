// The end of a request's latency breakdown: at its terminal event the engine
// makes the request's record from its trace (request_trace.h), adds its
// phases to the phase histograms, and, while a stats region is attached,
// writes it into the region's ring of recent requests under the record's own
// seqlock. Decode steps come from the durations of the engine's last
// kNumStepTimes steps (one store per step): a decoding sequence is in every
// step (decodes are scheduled first), so its steps are the engine's steps
// from its first token to its end.
//
// Engine thread only. No allocation; a record costs one copy into the ring,
// a copy of at most ZL_STATS_MAX_DECODE_STEPS of those durations (in the
// record's own format, so one or two memcpy) and a binary search for the
// longest of them (a step ends in O(1) amortized), so the step in which many
// requests finish stays short.
#pragma once

#include <array>
#include <cstdint>

#include "engine/sequence.h"
#include "zerolayer/histogram.h"
#include "zerolayer/stats_protocol.h"

namespace zl {

class RequestLog {
 public:
  // `finished`: when the terminal event was decided; `delivered`: when the
  // request's sink returned from on_finish (the transport has it).
  void record(const Sequence& seq, FinishReason reason, Clock::time_point finished, Clock::time_point delivered);
  // A forward pass ended at `end`.
  void on_step(Clock::time_point end);
  // Steps so far: the number of the step in progress once on_step() ran for it.
  uint64_t num_steps() const { return num_steps_; }

  // Where records go from now on (nullptr: nowhere). Positions keep counting.
  void attach(zl_stats_request_ring* ring) { ring_ = ring; }

  int64_t num_traced() const { return static_cast<int64_t>(next_position_); }
  const Histogram& transport_in_ns() const { return transport_in_ns_; }
  const Histogram& admission_ns() const { return admission_ns_; }
  const Histogram& queue_ns() const { return queue_ns_; }
  const Histogram& transport_out_ns() const { return transport_out_ns_; }
  const Histogram& total_ns() const { return total_ns_; }

 private:
  static constexpr uint64_t kNumStepTimes = 4096;
  void fill_decode_steps(const Sequence& seq, zl_stats_request& r) const;
  // The longest duration of steps [first, num_steps_] (0 if none is known).
  uint64_t longest_step_since(uint64_t first) const;
  // The oldest step whose duration is reported (fill_decode_steps() and the
  // longest-step queue both start there): step 2, the first with a known
  // duration, or once step_ns_ has wrapped, the second-oldest step it holds.
  uint64_t oldest_reported_step() const { return num_steps_ > kNumStepTimes ? num_steps_ - kNumStepTimes + 2 : 2; }
  void publish(const zl_stats_request& record);

  // Step k's duration (the time since step k - 1 ended), saturated as in
  // zl_stats_request::decode_step_ns, at [(k - 1) % kNumStepTimes]; k >= 2.
  std::array<uint32_t, kNumStepTimes> step_ns_{};
  int64_t last_end_ns_ = 0;
  uint64_t num_steps_ = 0;
  // Steps whose durations are known (within the ring) and longer than every
  // later one, oldest first: a monotonic queue in a ring of positions
  // [longest_head_, longest_tail_), so the longest step since any step is
  // the first entry at or after it.
  struct TimedStep {
    uint64_t step;
    uint64_t duration_ns;
  };
  std::array<TimedStep, kNumStepTimes> longest_{};
  uint64_t longest_head_ = 0, longest_tail_ = 0;
  zl_stats_request_ring* ring_ = nullptr;
  uint64_t next_position_ = 0;
  Histogram transport_in_ns_, admission_ns_, queue_ns_, transport_out_ns_, total_ns_;
};

}  // namespace zl
