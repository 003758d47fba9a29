// What the engine measures as it runs, in one place: histograms of its
// passes and of its finished requests, its counters, and the request log of
// latency breakdowns (engine/request_log.h). The engine's stages feed it
// where the events happen; EngineCore::stats() and the StatsPublisher read
// it.
// Engine thread only; recording never allocates.
#pragma once

#include <cstdint>

#include "engine/request_log.h"
#include "engine/sequence.h"
#include "zerolayer/engine.h"
#include "zerolayer/histogram.h"
#include "zerolayer/stats_protocol.h"

namespace zl {

inline uint64_t nanos_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

struct EngineMetrics {
  // A forward pass ended: its size, and the gap since the one before it
  // (host time between the two) when it followed that one at once.
  void record_pass(bool back_to_back, uint64_t gap_ns, size_t num_seqs, size_t num_tokens) {
    if (back_to_back) sched_gap_ns.record(gap_ns);
    batch_seqs.record(num_seqs);
    batch_tokens.record(num_tokens);
  }
  // The request's terminal event was decided at `now` (its request log
  // record is written too).
  void record_finish(const Sequence& seq, FinishReason reason, Clock::time_point now);
  // EngineStats' counters and histograms (what the pool and the queues
  // hold is the core's).
  void fill(EngineStats& s) const;
  // The histogram a stats region publishes under `id` (zl_stats_histogram_id).
  const Histogram& histogram(int id) const;
  int64_t num_steps() const { return static_cast<int64_t>(batch_seqs.count()); }  // one sample a pass

  // Per pass.
  Histogram sched_gap_ns, batch_seqs, batch_tokens;
  // Per finished request, but inter_token_ns: per generated token.
  Histogram ttft_ns, inter_token_ns, e2e_ns, queue_ns, prefill_ns, decode_ns;
  Histogram prompt_tokens, generation_tokens;
  int64_t num_preemptions = 0;
  int64_t num_overlapped_passes = 0;     // passes queued while another ran
  int64_t num_drains = 0;                // steps that waited for the pass in flight
  int64_t compaction_copy_ns_total = 0, compaction_copy_ns_max = 0;
  int64_t num_prompt_passes = 0;         // prefill first: passes of prompts alone while others decode
  int64_t num_finished_by_reason[4] = {};  // by FinishReason
  int64_t prompt_tokens_total = 0, generation_tokens_total = 0;
  RequestLog request_log;
};

}  // namespace zl
