// Step 3 of an engine step (engine/engine_core.h): runs a StepPlan's pass,
// the forward call and its sampling (run_forward_job), and hands back the
// plan whose pass has ended. Owns the two plan buffers, the logits and the
// ForwardRunner.
//
// Overlap scheduling (config, CPU): passes run on the runner's thread, so a
// launched pass is queued and the step returns; the next step plans past it
// (Scheduler), queues that behind it, then waits for it: the next pass
// starts on its tokens at once while the engine postprocesses it. The plan
// buffers alternate between the pass in flight and the one being planned or
// postprocessed. Without overlap (a device model's streams are not ready for
// a pass in flight while the engine plans the next) a pass runs here, to its
// end, in the step that launched it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/aligned_vector.h"
#include "engine/engine_state.h"
#include "engine/forward_runner.h"
#include "engine/step_plan.h"
#include "model/kv_cache.h"
#include "model/llama.h"

namespace zl {

class Executor {
 public:
  Executor(EngineState& state, LlamaModel& model, KvCache& cache);

  // The buffer the scheduler fills next: never one a pass in flight reads.
  StepPlan& next_plan() { return *plan_; }
  // Runs next_plan()'s pass: queued on the runner (behind the one running,
  // if any), or here to its end.
  void launch();
  // The plan whose pass has ended and is to be postprocessed now, or null.
  // pass_was_running: a pass was in flight when the step began; it is the
  // one that ends (waited for here). Else, with overlap, what was launched
  // keeps running and the next step plans beside it (null).
  StepPlan* ended_pass(bool pass_was_running);
  bool pass_running() const { return runner_ && runner_->outstanding() > 0; }
  // Overlap, between steps: sleeps until the pass after the one in flight
  // should be planned, shortly before that one should end, so that requests
  // arriving meanwhile join the next pass instead of the one after it; or
  // until the pass ends. False, at once, when that time is (nearly) now.
  bool wait_to_plan();
  // Shutdown: waits for the pass in flight, whose results are not needed.
  void discard_running();

 private:
  void prepare_job(StepPlan& plan);
  void fill_masks(StepPlan& plan);
  Clock::time_point plan_deadline() const;

  EngineState& state_;
  LlamaModel& model_;
  KvCache& cache_;
  StepPlan plans_[2];
  StepPlan* plan_ = &plans_[0];          // being planned, or ended
  StepPlan* inflight_ = &plans_[1];      // overlap: the pass on the runner
  bool launched_ = false;                // in this step
  uint64_t next_plan_id_ = 0;            // passes submitted to the runner
  // The last passes' forward and sampling time per batch token, and when
  // the last pass waited for ended (plan_deadline()).
  std::array<float, 8> ns_per_token_{};
  size_t num_timed_ = 0;
  Clock::time_point last_end_;
  AlignedVector<float> logits_;          // [max_num_seqs, vocab_size]
  // Declared after what a pass reads, so that it is destroyed (waiting for
  // the pass) first.
  std::unique_ptr<ForwardRunner> runner_;
};

}  // namespace zl
