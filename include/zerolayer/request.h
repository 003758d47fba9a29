// What a client hands the engine (Request) and what comes back (TokenEvent,
// then exactly one FinishEvent), delivered through the request's EventSink on
// the engine's output stage (engine/output_stage.h). Shared by the in-process
// API, HTTP and shared memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zerolayer/sampling.h"

namespace zl {

using RequestId = uint64_t;

enum class FinishReason {
  kStop,     // an eos id, a stop string, or min_token_prob
  kLength,   // max_new_tokens or the context is full
  kAborted,  // abort(), or the engine shut down
  kError,    // the request failed after admission (message in FinishEvent)
};
const char* finish_reason_name(FinishReason reason);

struct TokenEvent {
  RequestId id = 0;
  int32_t token = -1;
  std::string text;                   // the new text; may be empty (partial UTF-8, held stop prefix)
  float logprob = 0.0f;               // of the raw distribution; 0 unless sampling.return_logprob
                                      // or num_top_logprobs asked for it
  std::vector<TokenLogprob> top_logprobs;
};

// Per-request timings, seconds from submit().
struct RequestTimings {
  double queue_s = 0;                 // submit → admitted
  double prefill_s = 0;               // admitted → last prompt token computed
  double first_token_s = 0;           // submit → first token sampled
  double finish_s = 0;                // submit → finished
};

struct FinishEvent {
  RequestId id = 0;
  FinishReason reason = FinishReason::kLength;
  std::string stop_detail;            // "eos", "stop string", "min_token_prob", or the error
  std::string stop_string;            // the stop string that ended it, if one did (not in the text)
  int32_t stop_token = -1;            // the stop id (eos or a stop_token_ids entry) that ended it, else -1
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_prompt_tokens = 0;  // served from the prefix cache
  int32_t num_generated_tokens = 0;
  int32_t num_preemptions = 0;
  std::string remaining_text;         // text held back until the end (flushed), if any
  RequestTimings timings;
};

// Receives one request's events from the engine's output stage: one call at a
// time, in order, from its thread or the engine thread.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_token(const TokenEvent& event) = 0;
  virtual void on_finish(const FinishEvent& event) = 0;
};

// Where a request came from, for its latency breakdown (zerolayer/stats_protocol.h).
enum class Transport : uint32_t { kInProcess = 0, kHttp = 1, kShm = 2 };  // as zl_stats_transport
struct RequestOrigin {
  Transport transport = Transport::kInProcess;
  uint64_t client_tag = 0;            // the transport's id for it (shm: client_request_id)
  uint64_t sent_ns = 0;               // CLOCK_MONOTONIC when the client sent it; 0: unknown
};

class CompiledGrammar;  // engine/grammar.h

// Constrains a request's output to a language: the engine masks every token
// that cannot continue it (xgrammar, engine/grammar.h), and the request ends
// with kStop once the output is complete and the grammar takes a stop id.
struct StructuredOutput {
  enum class Kind {
    kNone,
    kJsonObject,   // any JSON object
    kJsonSchema,   // spec: a JSON schema (its text)
    kRegex,        // spec: a regular expression the whole output matches
    kChoice,       // choices: the output is exactly one of them
    kGrammar,      // spec: an EBNF grammar (GBNF as llama.cpp's), root rule "root"
    // spec: an xgrammar structural tag, {"type": "structural_tag", "format":
    // {...}}: free text and tagged regions (tool calls) mixed
    kStructuralTag,
  };
  Kind kind = Kind::kNone;
  std::string spec;
  std::vector<std::string> choices;
  // The request field that asked for it ("response_format", "guided_json",
  // ...): its errors start with this name.
  std::string field = "structured_output";
  // Set by Engine::compile_grammar(); when null, submit() compiles it.
  std::shared_ptr<const CompiledGrammar> compiled;
  // The grammar holds from the token after the output first writes these
  // ids (a reasoning model's </think>, as vLLM applies a grammar after the
  // reasoning); empty: from the first token. Not part of the compiled spec.
  std::vector<int32_t> after_ids;
};

struct Request {
  std::vector<int32_t> prompt_ids;    // either ids...
  std::string prompt_text;            // ...or text (tokenized at submit, with bos as the model wants)
  SamplingParams sampling;
  int32_t max_new_tokens = 256;  // the C++ API's default; HTTP's is field::kMaxTokens's
  std::vector<std::string> stop;      // stop strings (not included in the output)
  std::vector<int32_t> stop_token_ids;  // besides the model's eos ids
  bool ignore_eos = false;
  // The output's text leaves special tokens out (Hugging Face decode's
  // skip_special_tokens); tool-call syntaxes marked by them need them in.
  // Ending tokens (eos, stop_token_ids) are never in the text.
  bool skip_special_tokens = true;
  std::string cache_salt;             // requests with different salts never share KV
  // Higher is admitted first, then arrival order.
  int32_t priority = static_cast<int32_t>(field::kPriority.default_value);
  // Stop when p(sampled token) < this; 0: off.
  float min_token_prob = static_cast<float>(field::kMinTokenProb.default_value);
  StructuredOutput structured_output;
  std::shared_ptr<EventSink> sink;    // required
  RequestOrigin origin;
};

}  // namespace zl
