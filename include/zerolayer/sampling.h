// How a request's next token is chosen (SamplingParams) and the logprobs it
// may ask for; the algorithm is the engine's (engine/sampler.h). Part of the
// public API: include/zerolayer/request.h carries these.
#pragma once

#include <cstdint>

#include "zerolayer/status.h"

namespace zl {

// The most top logprobs a request may ask for (OpenAI's limit).
constexpr int32_t kMaxTopLogprobs = 20;

struct SamplingParams {
  float temperature = 1.0f;         // 0: greedy; otherwise (0, 100]
  int32_t top_k = 0;                // 0 or -1: off
  float top_p = 1.0f;               // (0, 1]
  float min_p = 0.0f;               // [0, 1]
  float repetition_penalty = 1.0f;  // (0, 10]; on prompt and output tokens (HF)
  float presence_penalty = 0.0f;    // [-2, 2]; on output tokens (OpenAI)
  float frequency_penalty = 0.0f;   // [-2, 2]; on output tokens (OpenAI)
  bool has_seed = false;
  uint64_t seed = 0;
  int32_t num_top_logprobs = 0;     // [0, kMaxTopLogprobs]
  bool return_logprob = false;      // compute the chosen token's logprob (implied by num_top_logprobs)
};

// Rejects NaN and out-of-range values with a message naming the field.
Status validate_sampling(const SamplingParams& params, int32_t vocab_size);

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0.0f;
};

}  // namespace zl
