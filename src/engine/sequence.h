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
#include <vector>

#include "engine/kv_pool.h"
#include "engine/request_trace.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "tokenizer/tokenizer.h"
#include "zerolayer/request.h"

namespace zl {

using Clock = std::chrono::steady_clock;

enum class SeqState { kWaiting, kRunning, kFinished };

struct Sequence {
  Sequence(RequestId id_in, Request request_in, std::vector<int32_t> prompt, int32_t max_total,
           int32_t vocab_size, const Tokenizer& tokenizer, const BlockSignature& salt_in,
           const ContinuationPieces* pieces = nullptr)
      : id(id_in),
        request(std::move(request_in)),
        tokens(std::move(prompt)),
        num_prompt_tokens(static_cast<int32_t>(tokens.size())),
        max_total_tokens(max_total),
        salt(salt_in),
        sampler(with_logprob_if_needed(request), vocab_size),
        decoder(tokenizer, /*skip_special=*/true, pieces),
        stops(request.stop) {
    tokens.reserve(static_cast<size_t>(max_total));
    sampler.set_prompt(tokens);
    // Prime the decoder with the prompt so the first token decodes as a
    // continuation (SentencePiece strips a leading space only at the start).
    for (int32_t id : tokens) (void)decoder.push(id);
  }

  // min_token_prob needs the sampled token's probability.
  static SamplingParams with_logprob_if_needed(const Request& r) {
    SamplingParams p = r.sampling;
    p.return_logprob |= r.min_token_prob > 0.0f;
    return p;
  }

  int32_t num_generated() const { return static_cast<int32_t>(tokens.size()) - num_prompt_tokens; }
  int32_t num_pending() const { return static_cast<int32_t>(tokens.size()) - num_computed; }

  const RequestId id;
  Request request;
  std::vector<int32_t> tokens;        // prompt, then every sampled token
  const int32_t num_prompt_tokens;
  const int32_t max_total_tokens;     // min(prompt + max_new_tokens, context)
  const BlockSignature salt;
  uint64_t arrival = 0;               // submit order, for FIFO within a priority

  SeqState state = SeqState::kWaiting;
  int32_t num_computed = 0;           // tokens whose KV is in `blocks`
  SeqBlocks blocks;
  int32_t num_cached_prompt_tokens = 0;  // from the prefix cache, first admission
  int32_t num_preemptions = 0;
  bool admitted_once = false;

  Sampler sampler;
  StreamDecoder decoder;
  StopMatcher stops;

  Clock::time_point submitted_at;
  Clock::time_point admitted_at;
  Clock::time_point prefilled_at;
  Clock::time_point first_token_at;
  Clock::time_point last_token_at;
  RequestTrace trace;                 // latency breakdown (engine/request_trace.h)
};

}  // namespace zl
