#include "engine/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

#include "core/check.h"

namespace zl {

Executor::Executor(EngineState& state, LlamaModel& model, KvCache& cache)
    : state_(state),
      model_(model),
      cache_(cache),
      plans_{StepPlan(state.config.max_num_batched_tokens, state.config.max_num_seqs, cache.num_blocks()),
             StepPlan(state.config.max_num_batched_tokens, state.config.max_num_seqs, cache.num_blocks())} {
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
  job.block_moves = plan.block_moves;
  job.logits = logits_.data();
  job.next_tokens = plan.next_tokens.data();
  job.sampled = plan.sampled;
  job.samples = plan.samples.data();
  job.top = plan.top.data();
  job.masks_by_engine = false;
  if (runner_)
    for (const SampledRow& s : plan.sampled) job.masks_by_engine |= s.sampler->has_grammar();
  job.masks_ready = 0;
}

// The pass before has ended: its tokens are in the matchers (its sampling
// accepted them), so the masks of the pass now running can be computed,
// beside its forward call instead of after it.
void Executor::fill_masks(StepPlan& plan) {
  for (const SampledRow& s : plan.sampled) s.sampler->fill_grammar_mask();
  std::atomic_ref<uint32_t>(plan.job.masks_ready).store(1, std::memory_order_release);
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
  plan.launched_at = Clock::now();
  runner_->submit(&plan.job);
}

StepPlan* Executor::ended_pass(bool pass_was_running) {
  const bool launched = std::exchange(launched_, false);
  if (!runner_) return launched ? plan_ : nullptr;
  if (!pass_was_running) {
    if (launched) std::swap(plan_, inflight_);  // plan the next in the other buffer
    if (launched && inflight_->job.masks_by_engine) fill_masks(*inflight_);
    return nullptr;
  }
  std::swap(plan_, inflight_);  // plan_: the pass that is ending
  const ForwardJob* job = runner_->wait();
  CHECK(job == &plan_->job) << "the runner returned passes out of order";
  if (launched && inflight_->job.masks_by_engine) fill_masks(*inflight_);
  const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(job->end - job->start).count());
  if (!plan_->tokens.empty())  // else it only copied KV (compaction)
    ns_per_token_[num_timed_++ % ns_per_token_.size()] = static_cast<float>(ns / static_cast<double>(plan_->tokens.size()));
  last_end_ = job->end;
  return plan_;
}

// The pass in flight started when it was queued or when the one before it
// ended, and lasts its batch's tokens times the lowest time per token of
// the last passes. An underestimate plans early: a request arriving late in
// the pass waits for one more pass. An overestimate costs little: the runner
// wakes the engine when the pass ends, and the next one starts after a
// planning (a few µs) instead of at once. The lead covers the engine's
// wake-up and planning.
Clock::time_point Executor::plan_deadline() const {
  if (num_timed_ == 0) return Clock::time_point();
  const size_t num = std::min(num_timed_, ns_per_token_.size());
  const float ns_per_token = *std::min_element(ns_per_token_.begin(), ns_per_token_.begin() + num);
  const auto estimate = std::chrono::nanoseconds(static_cast<int64_t>(ns_per_token * static_cast<float>(inflight_->tokens.size())));
  const auto lead = std::max<Clock::duration>(std::chrono::microseconds(100), estimate / 8);
  return std::max(inflight_->launched_at, last_end_) + estimate - lead;
}

bool Executor::wait_to_plan() {
  if (!pass_running()) return false;
  const Clock::time_point deadline = plan_deadline();
  if (deadline - Clock::now() < std::chrono::microseconds(100)) return false;
  runner_->sleep_until(deadline);
  return true;
}

void Executor::discard_running() {
  if (!pass_running()) return;
  runner_->wait();
  state_.committed_plan = inflight_->id;
}

}  // namespace zl
