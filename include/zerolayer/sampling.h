// How a request's next token is chosen (SamplingParams) and the logprobs it
// may ask for; the algorithm is the engine's (engine/sampler.h), the ranges
// and defaults zerolayer/request_fields.h's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zerolayer/request_fields.h"
#include "zerolayer/status.h"

namespace zl {

// OpenAI's logit_bias: `bias` added to token `id`'s logit before sampling.
struct LogitBias {
  int32_t id = 0;
  float bias = 0.0f;
};

struct SamplingParams {
  float temperature = static_cast<float>(field::kTemperature.default_value);
  int32_t top_k = static_cast<int32_t>(field::kTopK.default_value);
  float top_p = static_cast<float>(field::kTopP.default_value);
  float min_p = static_cast<float>(field::kMinP.default_value);
  float repetition_penalty = static_cast<float>(field::kRepetitionPenalty.default_value);
  float presence_penalty = static_cast<float>(field::kPresencePenalty.default_value);
  float frequency_penalty = static_cast<float>(field::kFrequencyPenalty.default_value);
  bool has_seed = false;
  uint64_t seed = 0;
  int32_t num_top_logprobs = static_cast<int32_t>(field::kTopLogprobs.default_value);
  bool return_logprob = false;      // compute the chosen token's logprob (implied by num_top_logprobs)
  std::vector<LogitBias> logit_bias;  // at most one entry per id; empty: none
};

// Every field against its RequestField (NaN and out-of-range values fail,
// naming it), and logprobs and logit_bias's ids against the vocabulary too.
Status validate_sampling(const SamplingParams& params, int32_t vocab_size);
// logit_bias alone, as validate_sampling checks it: at most vocab_size
// entries, each id in [0, vocab_size) and named once (twice would add its
// bias twice), each bias in field::kLogitBias's range.
Status check_logit_bias(std::span<const LogitBias> entries, int32_t vocab_size);

struct TokenLogprob {
  int32_t id = -1;
  float logprob = 0.0f;
};

}  // namespace zl
