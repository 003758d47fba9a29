// The numeric fields of a request, each defined once: its name (as the HTTP
// API spells it, and as error messages name it), its range, its default and
// what carries it. HTTP parsing (src/server/openai_api.cpp), shared-memory
// decoding (src/transport/wire.cpp) and Engine::submit all check against
// this table, and SamplingParams and Request take their defaults from it: a
// new field is one line here plus where each carrier reads it.
//
// The carriers are /v1/completions and /v1/chat/completions (JSON), a
// shared-memory request record (zl_shm_request, zerolayer/shm_protocol.h)
// and Request (zerolayer/request.h), which Engine::submit checks. The record
// and Request name a field as the API does, but for record_name.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "zerolayer/status.h"

namespace zl {

// The most top logprobs a request may ask for (OpenAI's limit).
constexpr int32_t kMaxTopLogprobs = 20;

// Which carriers take a field (RequestField::carriers).
enum FieldCarrier : unsigned {
  kCompletions = 1,  // POST /v1/completions
  kChat = 2,         // POST /v1/chat/completions
  kShm = 4,          // zl_shm_request
  kEngine = 8,       // Request, checked by Engine::submit
  kEveryCarrier = kCompletions | kChat | kShm | kEngine,
};

struct RequestField {
  const char* name;
  double lo, hi;         // the range, both ends included...
  bool lo_open;          // ...but lo when this is set
  bool integer;          // whole numbers only
  double default_value;  // what a request that leaves the field out gets
  unsigned carriers = kEveryCarrier;
  const char* record_name = nullptr;  // its name in zl_shm_request and Request, where it differs
  bool within_context = false;        // also at most the model's context (max_seq_len), where that is known
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
// Completions' logprobs count; chat reads it as top_logprobs (its logprobs is
// a boolean).
inline constexpr RequestField kTopLogprobs{"logprobs", 0, kMaxTopLogprobs, false, true, 0,
                                           kCompletions | kShm | kEngine, "num_top_logprobs"};
inline constexpr RequestField kMinTokenProb{"min_token_prob", 0, 1, false, false, 0};  // 0: off
inline constexpr RequestField kPriority{"priority", INT32_MIN, INT32_MAX, false, true, 0};
// New tokens per choice. Chat also reads it as max_completion_tokens, and its
// default there is what the context leaves after the prompt.
inline constexpr RequestField kMaxTokens{"max_tokens", 1, INT32_MAX, false, true, 16,
                                         kEveryCarrier, "max_new_tokens", true};
// Choices per prompt: HTTP makes n requests of one (seed + i when seeded).
inline constexpr RequestField kN{"n", 1, 128, false, true, 1, kCompletions | kChat};
// Each value of OpenAI's logit_bias map (token id -> bias added to its logit),
// not a scalar, so not in kAll; a shared-memory record carries pairs
// (zl_shm_logit_bias, protocol version 3).
inline constexpr RequestField kLogitBias{"logit_bias", -100, 100, false, false, 0, kEveryCarrier};
// All of the above, for those that go through every field (tests, docs).
inline constexpr const RequestField* kAll[] = {
    &kTemperature, &kTopK, &kTopP, &kMinP, &kRepetitionPenalty, &kPresencePenalty, &kFrequencyPenalty,
    &kTopLogprobs, &kMinTokenProb, &kPriority, &kMaxTokens, &kN,
};
}  // namespace field

// vLLM's stop_token_ids: at most this many per request (a shared-memory
// record's ZL_SHM_MAX_STOP_TOKEN_IDS, asserted equal where both are seen).
constexpr uint32_t kMaxStopTokenIds = 64;
// The longest stop string and cache_salt, in bytes, on every carrier (the
// latter is a shared-memory record's ZL_SHM_MAX_CACHE_SALT_BYTES).
constexpr uint32_t kMaxStopBytes = 1024;
constexpr uint32_t kMaxCacheSaltBytes = 256;

// How a message names a field: as the API spells it, or as a shared-memory
// record and Request do (RequestField::record_name).
enum class FieldName { kApi, kRecord };

// In range and, for an integer field, whole; NaN never is. `context` > 0
// bounds a within_context field further. The message names the field:
// "top_p must be in (0, 1], got 1.5".
Status check_field(const RequestField& field, double value, int64_t context = 0, FieldName as = FieldName::kApi);

// The id at `position` of a list of token ids the request names `field`
// (prompt, stop_token_ids) is in [0, vocab_size): "stop_token_ids: token id
// 70000 at position 2 is out of range [0, 32000)". check_token_ids: every id.
Status check_token_id(const char* field, int64_t id, size_t position, int64_t vocab_size);
Status check_token_ids(const char* field, std::span<const int32_t> ids, int64_t vocab_size);
// A text field of at most max_bytes: "cache_salt is longer than 256 bytes (300)".
Status check_text_bytes(const char* field, std::string_view text, uint32_t max_bytes);

}  // namespace zl
