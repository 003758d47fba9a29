#include "engine/executor.h"

#include <utility>

#include "core/check.h"

namespace zl {

Executor::Executor(EngineState& state, LlamaModel& model, KvCache& cache)
    : state_(state),
      model_(model),
      cache_(cache),
      plans_{StepPlan(state.config.max_num_batched_tokens, state.config.max_num_seqs),
             StepPlan(state.config.max_num_batched_tokens, state.config.max_num_seqs)} {
  logits_.resize(static_cast<size_t>(state.config.max_num_seqs) * static_cast<size_t>(model.config().vocab_size));
  if (state.config.overlap_scheduling && state.config.device.kind == Device::Kind::kCpu)
    runner_ = std::make_unique<ForwardRunner>(model, cache);
}

// Points plan's job at its batch and result buffers.
void Executor::prepare_job(StepPlan& plan) {
  ForwardJob& job = plan.job;
  job.batch = ForwardBatch{plan.tokens, plan.chunks, plan.rows};
  job.tokens = plan.tokens;
  job.feeds = plan.feeds;
  job.logits = logits_.data();
  job.next_tokens = plan.next_tokens.data();
  job.sampled = plan.sampled;
  job.samples = plan.samples.data();
  job.top = plan.top.data();
}

// On the runner, the plan's sequences are stamped with its pass's number
// (EngineState::in_flight(): the scheduler plans past the pass,
// reap_finished() keeps their blocks until it ends).
void Executor::launch() {
  StepPlan& plan = *plan_;
  prepare_job(plan);
  launched_ = true;
  if (!runner_) {
    run_forward_job(model_, cache_, plan.job);
    return;
  }
  state_.rows_kept = false;  // plans alternate between the two buffers from now on
  plan.id = ++next_plan_id_;
  for (const Scheduled& s : plan.scheduled) {
    s.seq->plan_id = plan.id;
    s.seq->plan_tokens = s.num_tokens;
    s.seq->plan_row = -1;
  }
  for (size_t row = 0; row < plan.row_seqs.size(); ++row) plan.row_seqs[row]->plan_row = static_cast<int32_t>(row);
  state_.metrics.num_overlapped_passes += pass_running();
  runner_->submit(&plan.job);
}

StepPlan* Executor::ended_pass(bool pass_was_running) {
  const bool launched = std::exchange(launched_, false);
  if (!runner_) return launched ? plan_ : nullptr;
  if (!pass_was_running) {
    if (launched) std::swap(plan_, inflight_);  // plan the next in the other buffer
    return nullptr;
  }
  std::swap(plan_, inflight_);  // plan_: the pass that is ending
  const ForwardJob* job = runner_->wait();
  CHECK(job == &plan_->job) << "the runner returned passes out of order";
  return plan_;
}

void Executor::discard_running() {
  if (!pass_running()) return;
  runner_->wait();
  state_.committed_plan = inflight_->id;
}

}  // namespace zl
