#include "engine/request_log.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/seqlock.h"

namespace zl {

void RequestLog::record(const Sequence& seq, FinishReason reason, Clock::time_point finished,
                        Clock::time_point delivered) {
  const RequestTrace& trace = seq.trace;
  zl_stats_request r{};
  const RequestOrigin& origin = seq.request.origin;
  const int64_t submitted_ns = monotonic_ns(seq.submitted_at);
  const int64_t finished_ns = monotonic_ns(finished);
  // A send time after the submit cannot be (validated at the transport); ignore it then.
  const bool has_sent = origin.sent_ns > 0 && int64_t(origin.sent_ns) <= submitted_ns;
  r.request_id = seq.id;
  r.client_tag = origin.client_tag;
  r.transport = static_cast<uint32_t>(origin.transport);
  r.finish_reason = static_cast<uint32_t>(reason);
  r.num_prompt_tokens = seq.num_prompt_tokens;
  r.num_cached_prompt_tokens = seq.num_cached_prompt_tokens;
  r.num_generated_tokens = seq.num_generated();
  r.num_preemptions = seq.num_preemptions;
  r.sent_ns = has_sent ? origin.sent_ns : 0;
  r.submitted_ns = uint64_t(submitted_ns);
  r.finished_ns = uint64_t(finished_ns);
  r.delivered_ns = uint64_t(monotonic_ns(delivered));
  r.transport_in_ns = has_sent ? uint64_t(submitted_ns) - origin.sent_ns : 0;
  if (!trace.admitted) {  // ended while waiting: it never got past admission
    r.admission_ns = uint64_t(trace.enqueued_ns - submitted_ns);
    r.queue_ns = uint64_t(finished_ns - trace.enqueued_ns);
  } else {
    r.admission_ns = trace.admission_ns;
    r.queue_ns = trace.queue_ns;
  }
  r.prefill_ns = trace.prefill_ns;
  r.num_prefill_chunks = trace.num_prefill_chunks;
  std::memcpy(r.prefill_chunks, trace.prefill_chunks, sizeof(r.prefill_chunks));
  if (seq.first_token_at != Clock::time_point()) {
    r.decode_ns = uint64_t(finished_ns - monotonic_ns(seq.first_token_at)) - trace.queue_while_decoding_ns;
    fill_decode_steps(seq, r);
  }
  // What the phases above leave of the engine's time (0 unless it ended between steps).
  const int64_t accounted = int64_t(r.admission_ns + r.queue_ns + r.prefill_ns + r.decode_ns);
  r.other_ns = uint64_t(std::max<int64_t>(finished_ns - submitted_ns - accounted, 0));
  r.transport_out_ns = r.delivered_ns - r.finished_ns;
  transport_in_ns_.record(r.transport_in_ns);
  admission_ns_.record(r.admission_ns);
  queue_ns_.record(r.queue_ns);
  transport_out_ns_.record(r.transport_out_ns);
  total_ns_.record(r.delivered_ns - (has_sent ? r.sent_ns : r.submitted_ns));
  publish(r);
}

void RequestLog::on_step(Clock::time_point end) {
  const int64_t end_ns = monotonic_ns(end);
  const int64_t previous_end_ns = last_end_ns_;
  last_end_ns_ = end_ns;
  if (++num_steps_ < 2) return;  // the first step's duration is not known
  const uint64_t duration = uint64_t(end_ns - previous_end_ns);
  const uint64_t clamped = std::min<uint64_t>(duration, std::numeric_limits<uint32_t>::max());
  step_ns_[(num_steps_ - 1) % kNumStepTimes] = uint32_t(clamped);
  const uint64_t oldest = oldest_reported_step();
  while (longest_head_ != longest_tail_ && longest_[longest_head_ % kNumStepTimes].step < oldest) ++longest_head_;
  while (longest_head_ != longest_tail_ && longest_[(longest_tail_ - 1) % kNumStepTimes].duration_ns <= duration)
    --longest_tail_;
  longest_[longest_tail_++ % kNumStepTimes] = TimedStep{num_steps_, duration};
}

uint64_t RequestLog::longest_step_since(uint64_t first) const {
  // Entries' steps increase from head to tail: the first one >= first.
  uint64_t lo = longest_head_, hi = longest_tail_;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (longest_[mid % kNumStepTimes].step < first) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == longest_tail_ ? 0 : longest_[lo % kNumStepTimes].duration_ns;
}

// The engine's steps after the one that sampled the first token, up to now
// (the finishing step, when it ended at a step): each one's duration is the
// time since the previous step ended. Steps older than the ring are not seen.
void RequestLog::fill_decode_steps(const Sequence& seq, zl_stats_request& r) const {
  const uint64_t first = seq.trace.last_prefill_step;
  if (first == 0 || first > num_steps_) return;
  r.num_decode_steps = static_cast<uint32_t>(num_steps_ - first);
  const uint64_t since = std::max(first + 1, oldest_reported_step());
  r.decode_step_max_ns = longest_step_since(since);
  const uint64_t last_kept = std::min<uint64_t>(num_steps_, since + ZL_STATS_MAX_DECODE_STEPS - 1);
  if (since > last_kept) return;
  // Steps [since, last_kept] sit at [since - 1, last_kept - 1] modulo the ring.
  const size_t count = static_cast<size_t>(last_kept - since + 1);
  const size_t begin = static_cast<size_t>((since - 1) % kNumStepTimes);
  const size_t before_wrap = std::min(count, static_cast<size_t>(kNumStepTimes) - begin);
  std::memcpy(r.decode_step_ns, step_ns_.data() + begin, before_wrap * sizeof(uint32_t));
  std::memcpy(r.decode_step_ns + before_wrap, step_ns_.data(), (count - before_wrap) * sizeof(uint32_t));
}

void RequestLog::publish(const zl_stats_request& record) {
  const uint64_t position = next_position_++;
  if (ring_ == nullptr) return;
  zl_stats_request& slot = ring_->records[position % ZL_STATS_REQUEST_RING_SLOTS];
  seqlock_write_begin(slot.sequence);
  // Everything after the sequence word, which the seqlock owns.
  constexpr size_t kSkip = sizeof(slot.sequence);
  seqlock_store(reinterpret_cast<uint8_t*>(&slot) + kSkip, reinterpret_cast<const uint8_t*>(&record) + kSkip,
                sizeof(record) - kSkip);
  seqlock_store(&slot.position, &position, sizeof(position));
  seqlock_write_end(slot.sequence);
  std::atomic_ref<uint64_t>(ring_->next_position).store(position + 1, std::memory_order_release);
}

}  // namespace zl
