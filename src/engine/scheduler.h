// Steps 1 and 2 of an engine step (engine/engine_core.h): admit waiting
// sequences, then plan the next forward pass. Reads and changes the request
// table (admission, preemption, KV reservations) and writes a StepPlan; it
// never runs the model and never reads logits.
//
// The algorithm, in one pass and O(batch). Admit waiting sequences in
// priority order (higher priority first, then arrival) while a sequence slot
// is free and the KV pool admits them (contiguous: their whole extent is
// reserved now; paged: their prompt's blocks); a sequence that does not fit
// stops admission (head of line), so order holds. Then fill the token budget:
// first every decoding sequence gets its one token, so running requests never
// stall behind a long prompt; then prefill sequences in admission order each
// get a chunk of what budget is left (chunked prefill), so a long prompt
// cannot starve short ones and is spread over several steps. There is no
// prefill or decode mode: each sequence's num_computed catches up with its
// tokens, and when a chunk reaches the last known token its logits row gives
// the next token. Under the paged policy a decode that finds no free block
// preempts the most recently admitted sequence (its blocks are released, it
// is requeued and later recomputes, losing nothing). When the postprocess
// stage kept the decode rows (EngineState::rows_kept), only prefill chunks
// are added after them.
//
// Prefill first (EngineConfig::prefill_first_ms > 0): while some admitted
// prompt still prefills, the pass computes prompts alone, in admission order
// until it holds kPrefillFirstTokens tokens, and decoding sequences sit it
// out, for at most prefill_first_ms in a row; then one mixed pass as above.
// A prompt's first token then waits only for the prompts before it, not for
// every decode row of the load (bench/results/flat_latency).
//
// With a pass still running (overlap) the plan is made as if it had ended:
// each sequence counts the tokens it has in that pass, and a row there
// becomes a decode here whose token the runner copies from that pass's
// result (a FeedRow). No KV block may be freed under it, so a preemption
// whose victim is in that pass sets EngineState::need_drain and waits for a
// step with no pass running. Compaction goes on beside it (compact_for()).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine_state.h"
#include "engine/step_plan.h"
#include "model/kv_cache.h"

namespace zl {

// A prefill-first pass stops taking prompts at this many tokens: on the CPU
// 128 tokens already run the matmuls at their compute peak, so more would
// only delay the oldest prompt's first token.
inline constexpr size_t kPrefillFirstTokens = 128;

class Scheduler {
 public:
  // cache: its block size and bytes (compaction slices).
  Scheduler(EngineState& state, KvCache& cache);

  // Admits what fits, then fills `plan` (empty: nothing to compute).
  // pass_running: a pass is in flight; plan past it.
  void schedule(StepPlan& plan, bool pass_running);

 private:
  void admit_waiting();
  bool compact_for(int32_t max_total_tokens);
  bool plan_prompts_alone();
  // Whether seq's next token, in a plan made now, is a decode.
  bool decodes_next(const Sequence* seq) const;
  // The tokens seq has to compute in a plan made now, past any in flight
  // (0 while a row in flight samples its next token); > 1: it prefills.
  int32_t prefill_left(const Sequence* seq) const;
  void add_decodes(int32_t* budget);
  void add_prefill_chunks(int32_t budget, size_t enough = SIZE_MAX);
  bool reserve(Sequence* seq, int32_t num_tokens);
  // feed_row >= 0: the one token is the in-flight pass's next token of
  // that row (overlap), else tokens from `start`.
  void add_to_batch(Sequence* seq, int32_t start, int32_t num_tokens, int32_t feed_row = -1);
  bool may_preempt_last() const;
  void preempt_last();

  EngineState& state_;
  KvCache& cache_;
  StepPlan* plan_ = nullptr;             // during schedule()
  std::vector<SeqBlocks*> live_scratch_; // [max_num_seqs] compaction: the running sequences' blocks
  int32_t max_moves_per_step_ = 0;       // a compaction slice's blocks (0: unbounded)
  // Prefill first: since when decoders have sat out (zero: they have not).
  Clock::time_point decodes_waiting_since_;
};

// The blocks a compaction slice moves at most (bytes_per_step: EngineConfig::
// compaction_bytes_per_step; at least one block, at most the pool), or 0
// where bytes_per_step is 0: each compaction at once.
int32_t compaction_blocks_per_step(int64_t bytes_per_step, int64_t bytes_per_block, int32_t num_blocks);

}  // namespace zl
