#include "engine/engine_metrics.h"

#include <algorithm>

#include "core/check.h"

namespace zl {

void EngineMetrics::record_finish(const Sequence& seq, FinishReason reason, Clock::time_point now) {
  e2e_ns.record(nanos_between(seq.submitted_at, now));
  if (seq.admitted_once) queue_ns.record(nanos_between(seq.submitted_at, seq.admitted_at));
  if (seq.prefilled_at != Clock::time_point()) prefill_ns.record(nanos_between(seq.admitted_at, seq.prefilled_at));
  if (seq.first_token_at != Clock::time_point()) {
    ttft_ns.record(nanos_between(seq.submitted_at, seq.first_token_at));
    decode_ns.record(nanos_between(seq.first_token_at, now));
  }
  prompt_tokens.record(static_cast<uint64_t>(seq.num_prompt_tokens));
  generation_tokens.record(static_cast<uint64_t>(seq.num_generated()));
  num_finished_by_reason[static_cast<int>(reason)]++;
  request_log.record(seq, reason, now, Clock::now());
}

void EngineMetrics::fill(EngineStats& s) const {
  s.num_steps = num_steps();
  for (int64_t n : num_finished_by_reason) s.num_finished += n;
  std::copy(std::begin(num_finished_by_reason), std::end(num_finished_by_reason), s.num_finished_by_reason);
  s.num_preemptions = num_preemptions;
  s.num_overlapped_passes = num_overlapped_passes;
  s.num_drains = num_drains;
  s.compaction_copy_ns_total = compaction_copy_ns_total;
  s.compaction_copy_ns_max = compaction_copy_ns_max;
  s.num_prompt_passes = num_prompt_passes;
  s.prompt_tokens_total = prompt_tokens_total;
  s.generation_tokens_total = generation_tokens_total;
  s.sched_gap_p50_us = static_cast<double>(sched_gap_ns.quantile(0.5)) / 1e3;
  s.sched_gap_p99_us = static_cast<double>(sched_gap_ns.quantile(0.99)) / 1e3;
  s.sched_gap_max_us = static_cast<double>(sched_gap_ns.max()) / 1e3;
  s.sched_gap_ns = sched_gap_ns;
  s.batch_seqs = batch_seqs;
  s.batch_tokens = batch_tokens;
  s.time_to_first_token_ns = ttft_ns;
  s.inter_token_ns = inter_token_ns;
  s.e2e_ns = e2e_ns;
  s.queue_ns = queue_ns;
  s.prefill_ns = prefill_ns;
  s.decode_ns = decode_ns;
  s.prompt_tokens = prompt_tokens;
  s.generation_tokens = generation_tokens;
  s.batch_size_mean = batch_seqs.mean();
  s.tokens_per_step_mean = batch_tokens.mean();
}

const Histogram& EngineMetrics::histogram(int id) const {
  switch (static_cast<zl_stats_histogram_id>(id)) {
    case ZL_STATS_HIST_SCHED_GAP_NS: return sched_gap_ns;
    case ZL_STATS_HIST_BATCH_SEQS: return batch_seqs;
    case ZL_STATS_HIST_BATCH_TOKENS: return batch_tokens;
    case ZL_STATS_HIST_TTFT_NS: return ttft_ns;
    case ZL_STATS_HIST_INTER_TOKEN_NS: return inter_token_ns;
    case ZL_STATS_HIST_E2E_NS: return e2e_ns;
    case ZL_STATS_HIST_QUEUE_NS: return queue_ns;
    case ZL_STATS_HIST_PREFILL_NS: return prefill_ns;
    case ZL_STATS_HIST_DECODE_NS: return decode_ns;
    case ZL_STATS_HIST_PROMPT_TOKENS: return prompt_tokens;
    case ZL_STATS_HIST_GENERATION_TOKENS: return generation_tokens;
    case ZL_STATS_HIST_PHASE_TRANSPORT_IN_NS: return request_log.transport_in_ns();
    case ZL_STATS_HIST_PHASE_ADMISSION_NS: return request_log.admission_ns();
    case ZL_STATS_HIST_PHASE_QUEUE_NS: return request_log.queue_ns();
    case ZL_STATS_HIST_PHASE_TRANSPORT_OUT_NS: return request_log.transport_out_ns();
    case ZL_STATS_HIST_PHASE_TOTAL_NS: return request_log.total_ns();
    case ZL_STATS_NUM_HISTOGRAMS: break;
  }
  CHECK(false) << "no histogram " << id;
  return sched_gap_ns;
}

}  // namespace zl
