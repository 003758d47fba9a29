#include "engine/engine_state.h"

#include <algorithm>

#include "core/check.h"

namespace zl {
namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// back() of the waiting vector is admitted next.
bool admitted_later(const std::unique_ptr<Sequence>& a, const std::unique_ptr<Sequence>& b) {
  const int32_t pa = a->request.priority, pb = b->request.priority;
  return pa < pb || (pa == pb && a->arrival > b->arrival);
}

}  // namespace

EngineState::EngineState(const EngineConfig& config_in, const KvCache& cache, int32_t max_seq_len,
                         int32_t sliding_window, OutputStage& output_in)
    : config(config_in),
      pool(KvPoolConfig{cache.num_blocks(), cache.block_size(), config_in.cache_policy}),
      output(output_in) {
  const size_t max_seqs = static_cast<size_t>(config.max_num_seqs);
  running.reserve(max_seqs);
  waiting.reserve(static_cast<size_t>(config.max_num_waiting) + max_seqs);
  releasing_.reserve(max_seqs);
  const int64_t blocks_per_seq = (int64_t{max_seq_len} + cache.block_size() - 1) / cache.block_size();
  const size_t table_capacity = static_cast<size_t>(std::min<int64_t>(blocks_per_seq, cache.num_blocks()));
  spare_tables_.resize(2 * max_seqs);
  for (std::vector<int32_t>& table : spare_tables_) table.reserve(table_capacity);
  retired_tables_.reserve(max_seqs);
  if (cache.num_window_slots() > 0) {
    window = std::make_unique<WindowSlots>(cache.num_window_slots(), cache.num_blocks(), cache.block_size(),
                                           sliding_window);
    spare_window_tables_.resize(max_seqs);
    // Sized once: a chunk's span of it stays valid as the window moves on.
    for (std::vector<int32_t>& table : spare_window_tables_) table.assign(table_capacity, 0);
  }
}

void EngineState::insert_waiting(std::unique_ptr<Sequence> seq) {
  seq->state = SeqState::kWaiting;
  auto at = std::upper_bound(waiting.begin(), waiting.end(), seq, admitted_later);
  waiting.insert(at, std::move(seq));
}

void EngineState::lend_tables(Sequence* seq) {
  CHECK(!spare_tables_.empty()) << "more running sequences than max_num_seqs";
  seq->blocks.table = std::move(spare_tables_.back());
  spare_tables_.pop_back();
  if (!window) return;
  seq->window.slots = std::move(spare_window_tables_.back());
  spare_window_tables_.pop_back();
}

void EngineState::take_back_tables(Sequence* seq) {
  spare_tables_.push_back(std::move(seq->blocks.table));
  seq->blocks.table = {};
  if (!window) return;
  spare_window_tables_.push_back(std::move(seq->window.slots));
  seq->window.slots = {};
}

void EngineState::renew_table(Sequence* seq) {
  if (!in_flight(seq) || seq->table_renewed_for == seq->plan_id) return;
  if (retired_until_ <= committed_plan) {  // the tables retired for an older pass are free again
    for (std::vector<int32_t>& table : retired_tables_) {
      table.clear();
      spare_tables_.push_back(std::move(table));
    }
    retired_tables_.clear();
  }
  retired_until_ = std::max(retired_until_, seq->plan_id);
  CHECK(!spare_tables_.empty()) << "no spare block table to renew";
  std::vector<int32_t> fresh = std::move(spare_tables_.back());
  spare_tables_.pop_back();
  fresh.assign(seq->blocks.table.begin(), seq->blocks.table.end());
  retired_tables_.push_back(std::move(seq->blocks.table));
  seq->blocks.table = std::move(fresh);
  seq->table_renewed_for = seq->plan_id;
}

void EngineState::finish(Sequence* seq, FinishReason reason, const char* detail, Clock::time_point now) {
  FinishEvent& event = seq->output->finish;
  event.id = seq->id;
  event.reason = reason;
  event.stop_detail = detail;
  event.num_prompt_tokens = seq->num_prompt_tokens;
  event.num_cached_prompt_tokens = seq->num_cached_prompt_tokens;
  event.num_generated_tokens = seq->num_generated();
  event.num_preemptions = seq->num_preemptions;
  auto since_submit = [&](Clock::time_point t) {
    return t == Clock::time_point() ? 0.0 : seconds_between(seq->submitted_at, t);
  };
  event.timings.queue_s = since_submit(seq->admitted_at);
  event.timings.prefill_s = seq->prefilled_at == Clock::time_point() ? 0.0 : seconds_between(seq->admitted_at, seq->prefilled_at);
  event.timings.first_token_s = since_submit(seq->first_token_at);
  event.timings.finish_s = since_submit(now);
  const bool held_blocks = seq->state == SeqState::kRunning;
  if (held_blocks) {
    rows_kept = false;  // its row, if any, is stale; postprocess keeps the rows anew
    sign_all(seq);
  }
  seq->state = SeqState::kFinished;
  any_finished_ = true;
  metrics.record_finish(*seq, reason, now);
  // Pushed here, a running sequence's finish could be delivered before its
  // blocks are back, when the output ring fills later in the step.
  if (!held_blocks) output.push_finish(seq->output.release());
}

// Finished sequences leave `running` here, not in finish(), so that the
// step's loops over raw pointers stay valid; the output stage frees them.
// Their blocks go back to the pool here too, all of a step's at once: the
// 126 sequences of a finish wave at 256 took ~0.5 µs each so, against ~1.5
// µs each one by one (KvPool::release(span) coalesces their runs).
void EngineState::reap_finished() {
  if (!any_finished_) return;
  any_finished_ = false;
  releasing_.clear();
  for (auto& seq : running) {
    if (seq->state != SeqState::kFinished) continue;
    if (in_flight(seq.get())) {
      any_finished_ = true;  // a running pass still writes its KV: next time
      continue;
    }
    release_window(seq.get());
    releasing_.push_back(&seq->blocks);
  }
  pool.release(releasing_);
  auto kept = running.begin();
  for (auto it = running.begin(); it != running.end(); ++it) {
    if ((*it)->state == SeqState::kFinished && !in_flight(it->get())) {
      take_back_tables(it->get());
      if ((*it)->output) output.push_finish((*it)->output.release());
      output.push_retire(it->release());
    } else {
      if (kept != it) *kept = std::move(*it);
      ++kept;
    }
  }
  running.erase(kept, running.end());
}

std::vector<const SeqBlocks*> EngineState::live_blocks() const {
  std::vector<const SeqBlocks*> live;
  for (const auto& seq : running) live.push_back(&seq->blocks);
  return live;
}

}  // namespace zl
