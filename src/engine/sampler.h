// Turning a row of logits into the next token: penalties, temperature,
// top-k, top-p and min-p, then a draw from a seeded generator, plus the
// logprobs of the chosen token and the top-n alternatives.
//
// Order (as vLLM): a grammar's mask (structured output, engine/grammar.h),
// penalties and logit_bias on the raw logits; greedy (temperature 0) takes
// the argmax (lowest id on ties); otherwise divide by temperature, keep the
// top-k, keep the smallest set whose probability reaches top-p, drop tokens
// below min-p × the top probability, renormalise and draw. Logprobs are those
// of the model's raw distribution (log_softmax of the unprocessed logits).
// Same seed and same logits give the same tokens on every machine.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/grammar.h"
#include "zerolayer/sampling.h"

namespace zl {

struct SampleResult {
  int32_t token = -1;
  float logprob = 0.0f;              // log p(token) under the raw distribution, if asked for
  // num_top_logprobs best, descending: the sampler's memory, valid until its next sample().
  std::span<const TokenLogprob> top;
  GrammarStep grammar = GrammarStep::kNone;  // what the token did to the request's grammar
};

class Sampler {
 public:
  Sampler(const SamplingParams& params, int32_t vocab_size);

  // Temperature 0, no penalty or bias, no logprob: the token is the argmax of the
  // logits and sample() keeps no state, so callers may skip the sampler.
  static bool is_plain_greedy(const SamplingParams& params);

  // Constrains every later sample() to the grammar (a request's structured
  // output); such a sampler is never plain greedy.
  void set_grammar(std::unique_ptr<GrammarMatcher> grammar) { grammar_ = std::move(grammar); }
  bool has_grammar() const { return grammar_ != nullptr; }
  // The grammar's mask for the next sample(), computed ahead (see GrammarMatcher::fill_mask).
  void fill_grammar_mask() {
    if (grammar_) grammar_->fill_mask();
  }
  // The prompt's tokens count for the repetition penalty.
  void set_prompt(std::span<const int32_t> prompt);
  // logits: [vocab_size], modified in place. Records the chosen token for penalties.
  SampleResult sample(float* logits);

 private:
  void apply_penalties(float* logits) const;
  int32_t draw(const float* logits);
  int32_t top_p_prefix(const float* logits, int32_t n, double total);
  uint64_t next_random();

  SamplingParams params_;
  int32_t vocab_size_;
  // Each [vocab_size] when the parameters need it, else empty.
  std::vector<int32_t> output_counts_;  // penalties: times each id was generated
  std::vector<uint8_t> seen_;           // penalties: 1 if in prompt or output
  std::vector<int32_t> candidates_;     // scratch for temperature > 0 and top logprobs
  std::vector<float> probs_;            // scratch for temperature > 0, by token id
  std::vector<float> raw_logits_;       // penalties or logit_bias: logits before them
  std::vector<TokenLogprob> top_;       // [num_top_logprobs] what sample() returns as top
  std::unique_ptr<GrammarMatcher> grammar_;
  uint64_t rng_[4];                     // xoshiro256**
};

}  // namespace zl
