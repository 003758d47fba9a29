// One request's latency breakdown (zl_stats_request in
// zerolayer/stats_protocol.h), filled in by the engine thread as the request
// moves on: enqueued, admitted, each prefill chunk, preempted. Each mark
// closes the interval since the previous one and gives it to one phase;
// request_log.h makes the record at the terminal event, decode steps
// included. A decoding sequence costs nothing here per step (touching one
// more cache line per sequence per step cost ~5% of the scheduling gap at 256
// sequences); no clock reads, no allocation.
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

  // Admitted in admission round `round` (counting from 1); again after a
  // preemption, when `decoding` says whether it had its first token then.
  void on_admit(TimePoint now, uint64_t round, TimePoint submitted, bool decoding) {
    const int64_t t = monotonic_ns(now);
    if (!admitted) {
      admitted = true;
      const bool at_once = round == enqueue_round + 1;
      const int64_t queued_from = at_once ? t : enqueued_ns;
      admission_ns = uint64_t(std::max<int64_t>(queued_from - monotonic_ns(submitted), 0));
      queue_ns = uint64_t(t - queued_from);
    } else {  // preempted, waiting to come back
      queue_ns += uint64_t(t - last_mark_ns);
      if (decoding) queue_while_decoding_ns += uint64_t(t - last_mark_ns);
    }
    last_mark_ns = t;
  }

  // Preempted; it last ran in the step that ended at `last_step_end`.
  void on_preempt(TimePoint last_step_end) { last_mark_ns = monotonic_ns(last_step_end); }

  // Ran a chunk of its prompt in step number `step` (counting from 1), which
  // ended at `now`. Decode steps cost nothing here: request_log.h derives them
  // from the engine's step times.
  void on_prefill_chunk(int32_t num_tokens, TimePoint now, uint64_t step) {
    const int64_t t = monotonic_ns(now);
    const uint64_t d = uint64_t(t - last_mark_ns);
    last_mark_ns = t;
    zl_stats_chunk& chunk = prefill_chunks[std::min(num_prefill_chunks, ZL_STATS_MAX_PREFILL_CHUNKS - 1)];
    chunk.num_tokens += num_tokens;
    chunk.ns += d;
    num_prefill_chunks++;
    prefill_ns += d;
    last_prefill_step = step;
  }

  int64_t last_mark_ns = 0;           // end of the last interval given to a phase
  uint64_t admission_ns = 0;
  uint64_t queue_ns = 0;
  uint64_t queue_while_decoding_ns = 0;  // the part of queue_ns after its first token
  uint64_t prefill_ns = 0;
  uint32_t num_prefill_chunks = 0;
  zl_stats_chunk prefill_chunks[ZL_STATS_MAX_PREFILL_CHUNKS] = {};
  uint64_t last_prefill_step = 0;     // the step of its last prefill chunk: it sampled the first token
  int64_t enqueued_ns = 0;
  uint64_t enqueue_round = 0;
  bool admitted = false;
};

}  // namespace zl
