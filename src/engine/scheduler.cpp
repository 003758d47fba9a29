#include "engine/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace zl {

Scheduler::Scheduler(EngineState& state, KvCache& cache) : state_(state), cache_(cache) {
  live_scratch_.reserve(static_cast<size_t>(state.config.max_num_seqs));
  max_moves_per_step_ =
      compaction_blocks_per_step(state.config.compaction_bytes_per_step, cache.bytes_per_block(), cache.num_blocks());
}

int32_t compaction_blocks_per_step(int64_t bytes_per_step, int64_t bytes_per_block, int32_t num_blocks) {
  if (bytes_per_step <= 0) return 0;
  return static_cast<int32_t>(std::clamp<int64_t>(bytes_per_step / bytes_per_block, 1, std::max(num_blocks, 1)));
}

void Scheduler::schedule(StepPlan& plan, bool pass_running) {
  plan_ = &plan;
  plan.block_moves.clear();
  admit_waiting();
  if (plan_prompts_alone()) return;
  decodes_waiting_since_ = Clock::time_point();  // every decoder has a row below (budget allowing)
  const int32_t budget = state_.config.max_num_batched_tokens;
  const size_t num_kept = plan.num_decode_rows;
  plan.reused = state_.rows_kept && num_kept > 0 && static_cast<int32_t>(num_kept) <= budget;
  plan.feeds.clear();
  if (plan.reused) {
    // Rows [0, num_kept) are every running sequence that decodes, advanced
    // by postprocess; the rest of `running` prefills.
    if (state_.running.size() > num_kept) add_prefill_chunks(budget - static_cast<int32_t>(num_kept));
    return;
  }
  plan.clear();
  int32_t left = budget;
  add_decodes(&left);
  add_prefill_chunks(left);
  // Paged pools can deadlock with every sequence mid-prefill and no block
  // free: then give the latest admitted sequence's memory to the others.
  // (Not while a pass runs: its sequences' blocks must stay.)
  if (plan.scheduled.empty() && state_.running.size() > 1 && !pass_running) preempt_last();
}

// Prefill first: a pass of prompts alone, unless decoders have sat out
// prefill_first_ms already or no prompt can be planned.
bool Scheduler::plan_prompts_alone() {
  const int32_t limit_ms = state_.config.prefill_first_ms;
  if (limit_ms <= 0) return false;
  const Clock::time_point now = Clock::now();
  const bool stalled = decodes_waiting_since_ != Clock::time_point();
  if (stalled && now - decodes_waiting_since_ >= std::chrono::milliseconds(limit_ms)) return false;
  bool prompts = false, decoders = false;
  for (const auto& seq : state_.running) {
    decoders = decoders || decodes_next(seq.get());
    prompts = prompts || prefill_left(seq.get()) > 1;
  }
  if (!prompts) return false;  // the plan buffer (and its kept rows) untouched
  StepPlan& plan = *plan_;
  plan.clear();
  plan.reused = false;
  state_.rows_kept = false;  // the kept decode rows, if any, are gone from the buffer
  add_prefill_chunks(state_.config.max_num_batched_tokens, kPrefillFirstTokens);
  if (plan.scheduled.empty()) return false;  // no memory for a prompt: a mixed pass
  plan.num_decode_rows = 0;
  plan.all_decoders_scheduled = !decoders;
  if (decoders && !stalled) decodes_waiting_since_ = now;
  state_.metrics.num_prompt_passes += decoders;
  return true;
}

int32_t Scheduler::prefill_left(const Sequence* seq) const {
  const bool in_flight = state_.in_flight(seq);
  if (seq->state != SeqState::kRunning || (in_flight && seq->plan_row >= 0)) return 0;
  return static_cast<int32_t>(seq->tokens.size()) - seq->num_computed - (in_flight ? seq->plan_tokens : 0);
}

bool Scheduler::decodes_next(const Sequence* seq) const {
  if (seq->state != SeqState::kRunning) return false;  // finished, its pass still running
  const bool in_flight = state_.in_flight(seq);
  if (in_flight && seq->plan_row >= 0) return true;
  return seq->num_pending() - (in_flight ? seq->plan_tokens : 0) == 1;
}

void Scheduler::admit_waiting() {
  ++state_.admit_round;
  auto& waiting = state_.waiting;
  while (!waiting.empty() && static_cast<int32_t>(state_.running.size()) < state_.config.max_num_seqs) {
    Sequence* seq = waiting.back().get();
    state_.lend_tables(seq);  // a spare exists: fewer than max_num_seqs run
    // Window slots are checked first: compaction cannot make room there.
    const bool slots = state_.window_admits(seq);
    auto admit = [&] { return state_.pool.admit(seq->tokens, seq->max_total_tokens, seq->salt, &seq->blocks, state_.window.get()); };
    AdmitOutcome outcome = slots ? admit() : AdmitOutcome::kWait;
    if (slots && outcome == AdmitOutcome::kWait && compact_for(seq->max_total_tokens)) outcome = admit();
    if (outcome != AdmitOutcome::kAdmitted) state_.take_back_tables(seq);
    if (outcome == AdmitOutcome::kWait) break;
    Clock::time_point now = Clock::now();
    if (outcome == AdmitOutcome::kNeverFits) {  // submit checks this; kept for safety
      state_.finish(seq, FinishReason::kError, "the request does not fit the KV pool", now);
      state_.output.push_retire(waiting.back().release());
      waiting.pop_back();
      continue;
    }
    if (state_.window) state_.window->admit(seq->blocks, seq->window);
    seq->num_computed = seq->blocks.num_prefix_tokens;
    // The cache gave all but its last token: it decodes at once, so the next
    // batch is built anew with it among the decodes.
    if (seq->num_pending() == 1) state_.rows_kept = false;
    seq->state = SeqState::kRunning;
    seq->trace.on_admit(now, state_.admit_round, seq->submitted_at, seq->first_token_at != Clock::time_point());
    if (!seq->admitted_once) {
      seq->admitted_once = true;
      seq->admitted_at = now;
      seq->num_cached_prompt_tokens = seq->blocks.num_prefix_tokens;
      state_.metrics.prompt_tokens_total += seq->num_prompt_tokens;
    }
    state_.running.push_back(std::move(waiting.back()));
    waiting.pop_back();
  }
}

// When a contiguous extent does not fit although enough blocks are free or
// cached, the free space is scattered: slide the running extents together,
// one slice a step of at most max_moves_per_step_ blocks (beyond it, the
// rest of one extent), whose KV copies the pass runs first. A pass in flight
// still reads the old block ids: the tables it reads are renewed, not
// rewritten, and the blocks it reads and writes keep their data until it
// ends (moves only go onto blocks no sequence holds, and the copies run
// after it). Returns whether the slice moved anything (the extent may fit
// now).
bool Scheduler::compact_for(int32_t max_total_tokens) {
  if (!state_.pool.compaction_may_help(max_total_tokens)) return false;
  std::vector<BlockMove>& moves = plan_->block_moves;
  if (!moves.empty()) return false;  // this step's slice is spent
  live_scratch_.clear();
  for (auto& seq : state_.running) live_scratch_.push_back(&seq->blocks);
  const int32_t needed = (max_total_tokens + cache_.block_size() - 1) / cache_.block_size();
  state_.pool.compact(live_scratch_, needed, &moves, max_moves_per_step_,
                      [this](size_t i) { state_.renew_table(state_.running[i].get()); });
  if (moves.empty()) return false;
  if (state_.window)
    for (const BlockMove& move : moves) state_.window->move_block(move.src, move.dst);
  state_.rows_kept = false;  // the kept rows' block tables changed
  return true;
}

bool Scheduler::reserve(Sequence* seq, int32_t num_tokens) {
  // Most calls (every decode under contiguous) are already covered.
  return num_tokens <= seq->blocks.num_reserved_tokens || state_.pool.ensure_capacity(seq->blocks, num_tokens);
}

// Decodes first, one token each. A decode that finds no block preempts the
// latest admitted sequence (possibly itself); `running` only shrinks from
// the back here. With a pass in flight, a sequence's state is taken as after
// that pass: a row that samples there decodes here on the token it will
// sample (the runner draws it right after that pass).
void Scheduler::add_decodes(int32_t* budget) {
  auto& running = state_.running;
  size_t i = 0;
  for (; i < running.size() && *budget > 0; ++i) {
    Sequence* seq = running[i].get();
    if (!decodes_next(seq)) continue;
    if (state_.in_flight(seq) && seq->plan_row >= 0) {
      // Its in-flight row samples its last token: it finishes by length.
      if (static_cast<int32_t>(seq->tokens.size()) + 1 >= seq->max_total_tokens) continue;
      const int32_t start = seq->num_computed + seq->plan_tokens;
      if (!reserve(seq, start + 1)) {  // paged: no block; preempt once the pass has ended
        state_.need_drain = true;
        continue;
      }
      add_to_batch(seq, start, 1, seq->plan_row);
      *budget -= 1;
      continue;
    }
    const int32_t num_tokens = static_cast<int32_t>(seq->tokens.size());
    bool has_room = reserve(seq, num_tokens);
    while (!has_room && running.back().get() != seq && may_preempt_last()) {
      preempt_last();
      has_room = reserve(seq, num_tokens);
    }
    if (!has_room && !may_preempt_last()) {  // the victim is in the running pass: after it
      state_.need_drain = true;
      continue;
    }
    if (!has_room) {
      preempt_last();  // seq itself is last
      break;
    }
    add_to_batch(seq, num_tokens - 1, 1);
    *budget -= 1;
  }
  plan_->num_decode_rows = plan_->scheduled.size();
  // The loop stops early only for the budget (or after preempting the last).
  plan_->all_decoders_scheduled = *budget > 0 || i >= running.size();
}

// Prefill chunks in admission order with what is left of the budget, until
// the plan holds `enough` tokens.
void Scheduler::add_prefill_chunks(int32_t budget, size_t enough) {
  for (size_t i = 0; i < state_.running.size() && budget > 0 && plan_->tokens.size() < enough; ++i) {
    Sequence* seq = state_.running[i].get();
    const int32_t pending = prefill_left(seq);
    if (pending <= 1) continue;
    const int32_t start = static_cast<int32_t>(seq->tokens.size()) - pending;
    int32_t chunk = std::min(pending, budget);
    if (state_.window) chunk = state_.window->max_chunk(seq->window, start, chunk);
    if (!reserve(seq, start + chunk)) continue;  // wait for memory
    add_to_batch(seq, start, chunk);
    budget -= chunk;
  }
}

void Scheduler::add_to_batch(Sequence* seq, int32_t start, int32_t num_tokens, int32_t feed_row) {
  StepPlan& plan = *plan_;
  const int32_t begin = static_cast<int32_t>(plan.tokens.size());
  const auto first = seq->tokens.begin() + start;
  if (feed_row >= 0) {
    plan.feeds.push_back(FeedRow{begin, feed_row});
    plan.tokens.push_back(0);  // the runner writes it before the pass
  } else if (num_tokens == 1) {
    plan.tokens.push_back(*first);  // a decode: cheaper than a range insert
  } else {
    plan.tokens.insert(plan.tokens.end(), first, first + num_tokens);
  }
  state_.prepare_window(seq, start, num_tokens);
  plan.chunks.push_back(SeqChunk{begin, num_tokens, start, seq->blocks.table, seq->window.slots});
  if (feed_row >= 0 || start + num_tokens == static_cast<int32_t>(seq->tokens.size())) {
    if (!seq->plain_greedy) plan.sampled.push_back(SampledRow{static_cast<int32_t>(plan.rows.size()), &seq->sampler});
    plan.rows.push_back(begin + num_tokens - 1);
    plan.row_seqs.push_back(seq);
  }
  plan.scheduled.push_back(Scheduled{seq, num_tokens});
}

// The latest admitted sequence may give its blocks up: no pass it is in
// still runs (a sequence that finished meanwhile goes in reap_finished()).
bool Scheduler::may_preempt_last() const {
  const Sequence* last = state_.running.back().get();
  return last->state == SeqState::kRunning && !state_.in_flight(last);
}

void Scheduler::preempt_last() {
  CHECK(may_preempt_last()) << "preemption would free blocks a running pass writes";
  state_.rows_kept = false;
  std::unique_ptr<Sequence> victim = std::move(state_.running.back());
  state_.running.pop_back();
  state_.sign_all(victim.get());
  state_.release_window(victim.get());
  state_.pool.release(victim->blocks);
  state_.take_back_tables(victim.get());
  victim->trace.on_preempt(state_.last_forward_end);
  victim->num_computed = 0;
  victim->num_preemptions++;
  state_.metrics.num_preemptions++;
  state_.insert_waiting(std::move(victim));
}

}  // namespace zl
