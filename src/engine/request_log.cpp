#include "engine/request_log.h"

#include <cstring>

#include "core/seqlock.h"

namespace zl {

void RequestLog::record(Sequence& seq, FinishReason reason, Clock::time_point finished, Clock::time_point delivered) {
  zl_stats_request& r = seq.trace.record;
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
  if (!seq.trace.admitted) {  // ended while waiting: it never got past admission
    r.admission_ns = uint64_t(seq.trace.enqueued_ns - submitted_ns);
    r.queue_ns = uint64_t(finished_ns - seq.trace.enqueued_ns);
  } else {
    r.other_ns = uint64_t(finished_ns - seq.trace.last_mark_ns);
  }
  r.transport_out_ns = r.delivered_ns - r.finished_ns;
  transport_in_ns_.record(r.transport_in_ns);
  admission_ns_.record(r.admission_ns);
  queue_ns_.record(r.queue_ns);
  transport_out_ns_.record(r.transport_out_ns);
  total_ns_.record(r.delivered_ns - (has_sent ? r.sent_ns : r.submitted_ns));
  publish(r);
}

void RequestLog::publish(const zl_stats_request& record) {
  const uint64_t position = next_position_++;
  if (ring_ == nullptr) return;
  zl_stats_request& slot = ring_->records[position % ZL_STATS_REQUEST_RING_SLOTS];
  seqlock_write_begin(slot.sequence);
  // Everything after the sequence word, which the seqlock owns.
  constexpr size_t kSkip = sizeof(slot.sequence);
  std::memcpy(reinterpret_cast<uint8_t*>(&slot) + kSkip, reinterpret_cast<const uint8_t*>(&record) + kSkip,
              sizeof(record) - kSkip);
  slot.position = position;
  seqlock_write_end(slot.sequence);
  std::atomic_ref<uint64_t>(ring_->next_position).store(position + 1, std::memory_order_release);
}

}  // namespace zl
