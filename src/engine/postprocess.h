// Step 4 of an engine step (engine/engine_core.h): what follows a pass.
// Commits each sequence's computed tokens to the KV pool (prompt blocks are
// signed at once, decode blocks a few a step), takes each logits row's next
// token (the argmax or its sampler's draw, made with the pass) and ends the
// sequence on it (EOS, a stop token, min_token_prob, length) or appends it
// and pushes it to the output stage, keeps the decode rows for the next plan
// where it can, and gives finished sequences' blocks back.
//
// Kept rows: without a pass running, every row whose sequence still runs
// decodes next, so it moves to the front of the batch, advanced to its next
// token, and the scheduler only adds prefill chunks after them. A row that
// must grow a paged table, or a finish outside this stage, builds the batch
// anew (EngineState::rows_kept).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine_state.h"
#include "engine/step_plan.h"

namespace zl {

class Postprocess {
 public:
  // eos_ids end generation unless a request sets ignore_eos.
  Postprocess(EngineState& state, int32_t block_size, std::vector<int32_t> eos_ids);

  // plan's pass has ended (plan.job holds its status and times): record it,
  // commit and finish its rows, release finished sequences' blocks.
  // pass_running: another pass is in flight (then no rows are kept).
  void finish_pass(StepPlan& plan, bool pass_running);

 private:
  // The four marked always_inline run for every row of every step, all from
  // update()'s row loop: as calls (GCC's size limits kept take_token and
  // keep_row out of line) each cost a prologue and epilogue, and the row's
  // fields were loaded again after each.
  void update(Clock::time_point now, bool pass_running);
  void commit_computed(const Scheduled& s, Clock::time_point now);
  [[gnu::always_inline]] inline void commit_decode(const Scheduled& s, Clock::time_point now);
  // record_inter_token: false when update() records the step's inter-token
  // times at once.
  [[gnu::always_inline]] inline void take_token(size_t row, Clock::time_point now, bool record_inter_token);
  [[gnu::always_inline]] inline bool keep_row(size_t row, size_t* next_rows);
  void queue_signing(Sequence* seq);
  [[gnu::always_inline]] inline void queue_signing_if_due(Sequence* seq);
  void sign_queued();
  // update(): asks for the lines row `row` of the batch needs (see there).
  void prefetch_row_state(size_t row) const;
  void prefetch_token_slot(size_t row) const;

  EngineState& state_;
  const int32_t block_size_;
  const std::vector<int32_t> eos_ids_;
  const int32_t signs_per_step_;         // decode blocks signed per step at most
  StepPlan* plan_ = nullptr;             // during finish_pass()
  std::vector<Sequence*> to_sign_;       // [signs_per_step_] decodes whose next block is signed this step
  std::vector<KvPool::PreparedSign> prepared_signs_;  // [signs_per_step_] the same, hashed
};

}  // namespace zl
