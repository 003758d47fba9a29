// The numeric fields of a request, each defined once: its name (as the HTTP
// API spells it, and as every error message names it), its range and its
// default. HTTP parsing (src/server/openai_api.cpp), shared-memory decoding
// (src/transport/wire.cpp) and Engine::submit all check against this table,
// and SamplingParams and Request take their defaults from it: a new field
// is one line here plus where each carrier reads it.
//
// Every field here travels in /v1/completions and /v1/chat/completions
// (JSON), in a shared-memory request record (zl_shm_request,
// zerolayer/shm_protocol.h) and in Request (zerolayer/request.h), under
// the same name but for logprobs (SamplingParams::num_top_logprobs).
#pragma once

#include <cstdint>

#include "zerolayer/status.h"

namespace zl {

// The most top logprobs a request may ask for (OpenAI's limit).
constexpr int32_t kMaxTopLogprobs = 20;

struct RequestField {
  const char* name;
  double lo, hi;         // the range, both ends included...
  bool lo_open;          // ...but lo when this is set
  bool integer;          // whole numbers only
  double default_value;  // what a request that leaves the field out gets
};

namespace field {
inline constexpr RequestField kTemperature{"temperature", 0, 100, false, false, 1};  // 0: greedy
inline constexpr RequestField kTopK{"top_k", -1, INT32_MAX, false, true, 0};        // 0 or -1: off
inline constexpr RequestField kTopP{"top_p", 0, 1, true, false, 1};
inline constexpr RequestField kMinP{"min_p", 0, 1, false, false, 0};
// On prompt and output tokens (Hugging Face); the two after, on output tokens (OpenAI).
inline constexpr RequestField kRepetitionPenalty{"repetition_penalty", 0, 10, true, false, 1};
inline constexpr RequestField kPresencePenalty{"presence_penalty", -2, 2, false, false, 0};
inline constexpr RequestField kFrequencyPenalty{"frequency_penalty", -2, 2, false, false, 0};
inline constexpr RequestField kTopLogprobs{"logprobs", 0, kMaxTopLogprobs, false, true, 0};
inline constexpr RequestField kMinTokenProb{"min_token_prob", 0, 1, false, false, 0};  // 0: off
inline constexpr RequestField kPriority{"priority", INT32_MIN, INT32_MAX, false, true, 0};
// All of the above, for those that go through every field (tests, docs).
inline constexpr const RequestField* kAll[] = {
    &kTemperature, &kTopK, &kTopP, &kMinP, &kRepetitionPenalty, &kPresencePenalty, &kFrequencyPenalty,
    &kTopLogprobs, &kMinTokenProb, &kPriority,
};
}  // namespace field

// In range and, for an integer field, whole; NaN never is. The message names
// the field: "top_p must be in (0, 1], got 1.5".
Status check_field(const RequestField& field, double value);

}  // namespace zl
