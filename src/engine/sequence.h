// One request's state inside the engine. Built by submit() on the caller's
// thread (tokenized and validated there, so the engine thread never
// allocates for it), then owned by the engine thread alone.
//
// Scheduling is in tokens (as vLLM): num_computed catches up with
// tokens.size(). A sequence with more than one uncomputed token is
// prefilling; with exactly one (the last sampled token) it is decoding. A
// step that computes up to tokens.size() samples the next token.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kv_pool.h"
#include "engine/output_stage.h"
#include "engine/request_trace.h"
#include "engine/sampler.h"
#include "engine/window_slots.h"
#include "tokenizer/tokenizer.h"
#include "zerolayer/request.h"

namespace zl {

using Clock = std::chrono::steady_clock;

enum class SeqState { kWaiting, kRunning, kFinished };

struct alignas(64) Sequence {
  Sequence(RequestId id_in, Request request_in, std::vector<int32_t> prompt, int32_t max_total,
           int32_t vocab_size, const Tokenizer& tokenizer, const BlockSignature& salt_in,
           const ContinuationPieces* pieces = nullptr)
      : plain_greedy(Sampler::is_plain_greedy(with_logprob_if_needed(request_in)) &&
                     request_in.structured_output.kind == StructuredOutput::Kind::kNone),
        ignore_eos(request_in.ignore_eos),
        has_stop_token_ids(!request_in.stop_token_ids.empty()),
        min_token_prob(request_in.min_token_prob),
        num_prompt_tokens(static_cast<int32_t>(prompt.size())),
        max_total_tokens(max_total),
        tokens(std::move(prompt)),
        id(id_in),
        request(std::move(request_in)),
        salt(salt_in),
        sampler(with_logprob_if_needed(request), vocab_size) {
    output = std::make_unique<RequestOutput>(id, request.sink, std::move(request.stop), tokenizer,
                                             request.skip_special_tokens, pieces, tokens);
    tokens.reserve(static_cast<size_t>(max_total));
    sampler.set_prompt(tokens);
  }

  // min_token_prob needs the sampled token's probability.
  static SamplingParams with_logprob_if_needed(const Request& r) {
    SamplingParams p = r.sampling;
    p.return_logprob |= r.min_token_prob > 0.0f;
    return p;
  }

  int32_t num_generated() const { return static_cast<int32_t>(tokens.size()) - num_prompt_tokens; }
  int32_t num_pending() const { return static_cast<int32_t>(tokens.size()) - num_computed; }

  // What every step reads or writes for a running sequence comes first: one
  // cache line here and one in `blocks`. A forward pass streams the KV cache
  // through every cache level, so after it each line is a miss, and the
  // engine prefetches these two for the whole batch at once.
  SeqState state = SeqState::kWaiting;
  const bool plain_greedy;            // argmax only: no sampler state, no logprob
  const bool ignore_eos;              // request.ignore_eos
  const bool has_stop_token_ids;      // !request.stop_token_ids.empty()
  const float min_token_prob;         // request.min_token_prob
  const int32_t num_prompt_tokens;
  const int32_t max_total_tokens;     // min(prompt + max_new_tokens, context)
  int32_t num_computed = 0;           // tokens whose KV is in `blocks`
  std::vector<int32_t> tokens;        // prompt, then every sampled token
  // Detokenizer, stop strings and sink: handed to the output stage with the
  // finish record (engine/output_stage.h).
  std::unique_ptr<RequestOutput> output;
  Clock::time_point last_token_at;
  SeqBlocks blocks;                   // its first line is hot

  const RequestId id;
  // Overlap scheduling: the last pass submitted to the runner with this
  // sequence in it, its tokens there and its logits row (-1: none).
  uint64_t plan_id = 0;
  int32_t plan_tokens = 0;
  int32_t plan_row = -1;
  uint64_t table_renewed_for = 0;     // the pass whose reads renew_table() last kept
  Clock::time_point first_token_at;
  Clock::time_point prefilled_at;
  Request request;
  const BlockSignature salt;
  SeqWindow window;                   // the windowed layers' slots (engine/window_slots.h)
  uint64_t arrival = 0;               // submit order, for FIFO within a priority
  int32_t num_cached_prompt_tokens = 0;  // from the prefix cache, first admission
  int32_t num_preemptions = 0;
  bool admitted_once = false;

  Sampler sampler;

  Clock::time_point submitted_at;
  Clock::time_point admitted_at;
  RequestTrace trace;                 // latency breakdown (engine/request_trace.h)
};

}  // namespace zl
