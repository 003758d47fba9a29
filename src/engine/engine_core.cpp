#include "engine/engine_core.h"

namespace zl {

EngineCore::EngineCore(const EngineConfig& config, LlamaModel& model, KvCache& cache,
                       std::vector<int32_t> eos_ids, OutputStage* output)
    : own_output_(output ? nullptr
                         : std::make_unique<OutputStage>([this](RequestId id) { pending_stops_.push_back(id); },
                                                         output_capacity(config))),
      state_(config, cache, model.config().max_seq_len, model.config().sliding_window,
             output ? *output : *own_output_),
      scheduler_(state_, cache),
      postprocess_(state_, cache.block_size(), std::move(eos_ids)),
      executor_(state_, model, cache) {
  if (own_output_) pending_stops_.reserve(static_cast<size_t>(output_capacity(config)));
}

void EngineCore::step() {
  const bool overlapped = executor_.pass_running();  // the last step's pass
  if (!overlapped) state_.need_drain = false;
  if (!state_.need_drain) {
    StepPlan& plan = executor_.next_plan();
    scheduler_.schedule(plan, overlapped);                       // 1, 2
    if (!plan.scheduled.empty() || !plan.block_moves.empty()) executor_.launch();  // 3
  } else {
    ++state_.metrics.num_drains;
  }
  StepPlan* ended = executor_.ended_pass(overlapped);            // 4
  if (!ended) return;
  postprocess_.finish_pass(*ended, executor_.pass_running());    // 5
  publish();                                                     // 6
  // The gap (without overlap: postprocessing, publishing, scheduling; with
  // it, the runner's start of the queued pass) is measured only between
  // back-to-back passes, never across idle time.
  state_.have_last_forward = has_work();
  state_.last_forward_end = ended->job.end;
}

void EngineCore::enqueue(std::unique_ptr<Sequence> seq) {
  seq->arrival = state_.next_arrival++;
  seq->trace.on_enqueue(Clock::now(), state_.admit_round);
  state_.insert_waiting(std::move(seq));
}

void EngineCore::abort(RequestId id) {
  finish_by_id(id, FinishReason::kAborted, "aborted");
  publish();
}

void EngineCore::stop_by_string(RequestId id) {
  finish_by_id(id, FinishReason::kStop, "stop string");
  publish();
}

void EngineCore::finish_by_id(RequestId id, FinishReason reason, const char* detail) {
  Clock::time_point now = Clock::now();
  for (auto& seq : state_.running)
    if (seq->id == id && seq->state == SeqState::kRunning) state_.finish(seq.get(), reason, detail, now);
  auto& waiting = state_.waiting;
  for (auto it = waiting.begin(); it != waiting.end(); ++it) {
    if ((*it)->id == id) {
      state_.finish(it->get(), reason, detail, now);
      state_.output.push_retire(it->release());
      waiting.erase(it);
      break;
    }
  }
  state_.reap_finished();
}

void EngineCore::abort_all() {
  executor_.discard_running();
  Clock::time_point now = Clock::now();
  for (auto& seq : state_.running)
    if (seq->state == SeqState::kRunning) state_.finish(seq.get(), FinishReason::kAborted, "engine shut down", now);
  for (auto& seq : state_.waiting) {
    state_.finish(seq.get(), FinishReason::kAborted, "engine shut down", now);
    state_.output.push_retire(seq.release());
  }
  state_.waiting.clear();
  state_.reap_finished();
  publish();
}

// Hands the step's records to the output stage. Inline (no stage thread),
// stop strings found while delivering end their requests right here.
void EngineCore::publish() {
  state_.output.publish();
  while (!pending_stops_.empty()) {
    const RequestId id = pending_stops_.back();
    pending_stops_.pop_back();
    finish_by_id(id, FinishReason::kStop, "stop string");
    state_.output.publish();
  }
}

EngineStats EngineCore::stats() const {
  EngineStats s;
  s.num_running = num_running();
  s.num_waiting = num_waiting();
  state_.metrics.fill(s);
  s.kv = state_.pool.stats();
  if (state_.window) {
    const WindowSlotStats w = state_.window->stats();
    s.window_slots = w.num_slots;
    s.window_slots_pinned = w.num_pinned;
    s.window_slots_cached = w.num_cached;
  }
  return s;
}

}  // namespace zl
