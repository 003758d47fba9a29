// One request's latency breakdown (zl_stats_request in
// zerolayer/stats_protocol.h), filled in by the engine thread as the request
// moves on: enqueued, admitted, each step it runs in. Each mark closes the
// interval since the previous one and gives it to exactly one phase, so the
// phases add up to the request's whole time; request_log.h completes the
// record at the terminal event. Per step this is a subtraction and a few
// stores into the request's own record: no clock reads, no allocation.
//
// Queue time is waiting for capacity only: a request admitted by the first
// admission round after it reached the engine has none (its wait for that
// round to start, behind a running step, is admission).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

#include "zerolayer/stats_protocol.h"

namespace zl {

// Nanoseconds of CLOCK_MONOTONIC, which std::chrono::steady_clock reads on Linux.
inline int64_t monotonic_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

struct RequestTrace {
  using TimePoint = std::chrono::steady_clock::time_point;

  // Reached the engine thread; `round` admission rounds have run so far.
  void on_enqueue(TimePoint now, uint64_t round) {
    enqueued_ns = monotonic_ns(now);
    last_mark_ns = enqueued_ns;
    enqueue_round = round;
  }

  // Admitted in admission round `round` (counting from 1); again after a preemption.
  void on_admit(TimePoint now, uint64_t round, TimePoint submitted) {
    const int64_t t = monotonic_ns(now);
    if (!admitted) {
      admitted = true;
      const bool at_once = round == enqueue_round + 1;
      const int64_t queued_from = at_once ? t : enqueued_ns;
      record.admission_ns = uint64_t(std::max<int64_t>(queued_from - monotonic_ns(submitted), 0));
      record.queue_ns = uint64_t(t - queued_from);
    } else {
      record.queue_ns += uint64_t(t - last_mark_ns);  // preempted, waiting to come back
    }
    last_mark_ns = t;
  }

  // Ran num_tokens tokens in the step that ended at `now`: a prefill chunk
  // until the first token is sampled, a decode step after.
  void on_computed(int32_t num_tokens, bool prefill, TimePoint now) {
    const int64_t t = monotonic_ns(now);
    const uint64_t d = uint64_t(t - last_mark_ns);
    last_mark_ns = t;
    if (prefill) {
      zl_stats_chunk& chunk = record.prefill_chunks[std::min(record.num_prefill_chunks, ZL_STATS_MAX_PREFILL_CHUNKS - 1)];
      chunk.num_tokens += num_tokens;
      chunk.ns += d;
      record.num_prefill_chunks++;
      record.prefill_ns += d;
      return;
    }
    if (record.num_decode_steps < ZL_STATS_MAX_DECODE_STEPS)
      record.decode_step_ns[record.num_decode_steps] = uint32_t(std::min<uint64_t>(d, std::numeric_limits<uint32_t>::max()));
    record.num_decode_steps++;
    record.decode_ns += d;
    record.decode_step_max_ns = std::max(record.decode_step_max_ns, d);
  }

  zl_stats_request record{};  // phases and steps so far; the rest is filled at the end
  int64_t enqueued_ns = 0;
  int64_t last_mark_ns = 0;   // end of the last interval given to a phase
  uint64_t enqueue_round = 0;
  bool admitted = false;
};

}  // namespace zl
