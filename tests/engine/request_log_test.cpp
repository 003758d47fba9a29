// RequestLog's per-request decode steps: the longest step since a request's
// first token, found by a monotonic queue and a binary search instead of a
// pass over every step, equals the brute-force maximum over the same steps,
// across the wrap of its ring of step times.
#include "engine/request_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace zl {
namespace {

TEST(RequestLogTest, LongestDecodeStepMatchesBruteForceAcrossTheRingWrap) {
  auto tokenizer = make_byte_tokenizer(258);
  Request request;
  Sequence seq(1, std::move(request), {1, 2, 3}, 16, 258, *tokenizer, BlockSignature{});
  seq.submitted_at = Clock::now();
  seq.first_token_at = seq.submitted_at;
  auto ring = std::make_unique<zl_stats_request_ring>();
  RequestLog log;
  log.attach(ring.get());

  constexpr uint64_t kRingSteps = 4096;  // RequestLog::kNumStepTimes
  std::mt19937_64 rng(7);
  std::vector<uint64_t> durations(1, 0);  // [step - 1]; the first step's is unknown
  Clock::time_point end = seq.submitted_at;
  log.on_step(end);
  for (uint64_t step = 2; step <= 3 * kRingSteps; ++step) {
    // Mostly short steps with rare long ones, so the queue both grows and empties.
    const uint64_t d = rng() % 50 == 0 ? 100000 + rng() % 900000 : 1000 + rng() % 9000;
    end += std::chrono::nanoseconds(d);
    durations.push_back(d);
    log.on_step(end);
    // Steps whose kept durations run across the ring's end (60 of them from
    // slot kRingSteps - 40 on) must come out in order too.
    const bool across_end = step >= 2 * kRingSteps + 20 && step < 2 * kRingSteps + 30;
    if (step % 97 != 0 && !across_end) continue;
    seq.trace.last_prefill_step = across_end ? step - 60 : step - rng() % std::min<uint64_t>(step, kRingSteps + 100);
    log.record(seq, FinishReason::kLength, end, end);
    const zl_stats_request& r = ring->records[(log.num_traced() - 1) % ZL_STATS_REQUEST_RING_SLOTS];
    // The steps after the first token whose start is still in the ring.
    const uint64_t oldest = step > kRingSteps ? step - kRingSteps + 1 : 1;
    const uint64_t since = std::max<uint64_t>(seq.trace.last_prefill_step, oldest) + 1;
    uint64_t expected = 0;
    for (uint64_t s = since; s <= step; ++s) expected = std::max(expected, durations[s - 1]);
    ASSERT_EQ(r.decode_step_max_ns, expected) << "step " << step << " since " << since;
    ASSERT_EQ(r.num_decode_steps, step - seq.trace.last_prefill_step);
    const uint64_t kept = since > step ? 0 : std::min<uint64_t>(step - since + 1, ZL_STATS_MAX_DECODE_STEPS);
    for (uint64_t i = 0; i < kept; ++i)
      ASSERT_EQ(r.decode_step_ns[i], durations[since - 1 + i]) << "step " << step << " entry " << i;
  }
}

}  // namespace
}  // namespace zl
