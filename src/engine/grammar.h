// Structured output: a request's StructuredOutput (zerolayer/request.h)
// compiled for the model's vocabulary, and each sequence's place in it.
//
// The grammar engine is xgrammar's C++ core (built from its PyPI source
// distribution, cmake/xgrammar.cmake), as vLLM and SGLang use it: it compiles
// JSON schemas, regular expressions and EBNF into a pushdown automaton whose
// per-state token masks are mostly precomputed, so a step's mask costs
// microseconds, not a walk over the vocabulary. (llguidance, the other engine
// made for this, is Rust: its source would need crates.io, which the build
// machines do not reach.) xgrammar stays behind this header: nothing outside
// grammar.cpp includes it.
//
// Threads: GrammarCompiler::compile is thread-safe (HTTP workers, shm, the
// C++ API call it); a GrammarMatcher belongs to one sequence's sampler and is
// used by whichever thread samples that sequence, one step at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "zerolayer/request.h"
#include "zerolayer/status.h"

namespace zl {

class Tokenizer;

class GrammarCompiler {
 public:
  // vocab_size: the model's logits row (may exceed the tokenizer's; the ids
  // beyond it are never allowed). stop_ids: the ids that may end a complete
  // output (the model's eos ids; each matcher adds its request's own).
  GrammarCompiler(const Tokenizer& tokenizer, int32_t vocab_size, std::vector<int32_t> stop_ids);
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  // Compiles `output` (kind != kNone). Identical specs hit a cache (bounded
  // in bytes). Errors are kInvalidArgument led by output.field.
  StatusOr<std::shared_ptr<const CompiledGrammar>> compile(const StructuredOutput& output) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What accepting a sampled token did to the grammar.
enum class GrammarStep : uint8_t {
  kNone,      // no grammar, or the output goes on
  kEnded,     // the token was a stop id the complete output allows: the request ends
  kRejected,  // the grammar does not allow the token (only if the mask was not applied)
};

// One sequence's position in its grammar.
class GrammarMatcher {
 public:
  // stop_ids: besides the compiler's, the request's own stop_token_ids.
  // after_ids (StructuredOutput::after_ids): until the output has written
  // them, the matcher masks nothing and only watches for them.
  GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, std::span<const int32_t> stop_ids,
                 std::vector<int32_t> after_ids = {});
  ~GrammarMatcher();
  GrammarMatcher(const GrammarMatcher&) = delete;
  GrammarMatcher& operator=(const GrammarMatcher&) = delete;

  // Computes which tokens the grammar allows next (xgrammar's bitmask),
  // once per token: overlap scheduling fills it on the engine thread while
  // the pass that samples with it runs.
  void fill_mask();
  // Sets every logit the mask forbids to -inf, filling it first if
  // fill_mask() has not. logits: [vocab_size]. After the end it leaves them:
  // the sequence has ended, and a row of it a queued pass computes is dropped.
  void apply_mask(float* logits);
  // Advances past the sampled token.
  GrammarStep accept(int32_t token);
  bool ended() const { return ended_; }
  // Whether the grammar holds yet (after_ids written, or none).
  bool active() const { return after_ids_.empty(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  // Cleared once the output's last after_ids_.size() tokens (recent_) equal it.
  std::vector<int32_t> after_ids_;
  std::vector<int32_t> recent_;
  bool ended_ = false;
  bool filled_ = false;  // the mask is the next token's
};

}  // namespace zl
