// The scheduling algorithm. Every step, in one pass and O(batch): admit
// waiting sequences in priority order (higher priority first, then arrival)
// while a sequence slot is free and the KV pool admits them (contiguous:
// their whole extent is reserved now; paged: their prompt's blocks); a
// sequence that does not fit stops admission (head of line), so order holds.
// Then fill the token budget: first every decoding sequence gets its one
// token, so running requests never stall behind a long prompt; then prefill
// sequences in admission order each get a chunk of what budget is left
// (chunked prefill), so a long prompt cannot starve short ones and is spread
// over several steps. There is no prefill or decode mode: each sequence's
// num_computed catches up with its tokens, and when a chunk reaches the last
// known token its logits row is sampled. Under the paged policy a decode that
// finds no free block preempts the most recently admitted sequence (its
// blocks are released, it is requeued and later recomputes, losing nothing).
// After the forward pass, completed prompt blocks are signed at once and
// decode blocks at most ceil(max_num_seqs / block_size) a step (their
// average rate), so sequences decoding in step do not all sign in one step.
// Without a pass running, the decode rows stay from step to step: after
// sampling, every row whose sequence still runs (it decodes next) moves to
// the front of the batch, advanced to its next token, and schedule() only
// adds the prefill chunks after them. A preemption, a finish outside the step (abort, stop string),
// a compaction, a paged table that must grow, or more decodes than the token
// budget make schedule() build the batch anew instead.
// The sequences that finish in a step give their blocks back together.
// A pass is the forward call and its sampling: the rows whose sequence
// samples draw their token from their logits row right after it, on the
// thread that ran it, so the engine reads tokens, never logits.
// With overlap scheduling (contiguous, CPU) the passes run on a runner
// thread and a step is: plan the next pass as if the running one had ended
// (each sequence counts the tokens it has in that pass, and a row there
// becomes a decode here whose token the runner copies from the running
// pass's result), queue it, then wait for the running pass and commit and
// publish it while the queued one runs. A sequence that finishes meanwhile
// may have a queued row (or prefill chunk), computed and dropped; it keeps
// its blocks and its finish event until that pass ends. Admissions that
// need compaction run with nothing queued behind them.
#include "engine/engine_core.h"

#include <algorithm>
#include <cmath>

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

EngineCore::EngineCore(const EngineConfig& config, LlamaModel& model, KvCache& cache,
                       std::vector<int32_t> eos_ids, OutputStage* output)
    : config_(config),
      model_(model),
      cache_(cache),
      eos_ids_(std::move(eos_ids)),
      signs_per_step_((config.max_num_seqs + cache.block_size() - 1) / cache.block_size()),
      pool_(KvPoolConfig{cache.num_blocks(), cache.block_size(), config.cache_policy}),
      own_output_(output ? nullptr
                         : std::make_unique<OutputStage>([this](RequestId id) { pending_stops_.push_back(id); },
                                                         output_capacity(config))),
      output_(output ? output : own_output_.get()) {
  const size_t max_seqs = static_cast<size_t>(config.max_num_seqs);
  for (StepPlan& plan : plans_) {
    plan.tokens.reserve(static_cast<size_t>(config.max_num_batched_tokens));
    plan.chunks.reserve(max_seqs);
    plan.rows.reserve(max_seqs);
    plan.row_seqs.reserve(max_seqs);
    plan.scheduled.reserve(max_seqs);
    plan.next_tokens.resize(max_seqs);
    plan.sampled.reserve(max_seqs);
    plan.samples.resize(max_seqs);
    plan.top.resize(max_seqs * kMaxTopLogprobs);
    plan.feeds.reserve(max_seqs);
  }
  running_.reserve(max_seqs);
  waiting_.reserve(static_cast<size_t>(config.max_num_waiting) + max_seqs);
  logits_.resize(max_seqs * static_cast<size_t>(model.config().vocab_size));
  to_sign_.reserve(static_cast<size_t>(signs_per_step_));
  prepared_signs_.reserve(static_cast<size_t>(signs_per_step_));
  live_scratch_.reserve(max_seqs);
  releasing_.reserve(max_seqs);
  moves_.reserve(static_cast<size_t>(cache.num_blocks()));
  if (own_output_) pending_stops_.reserve(static_cast<size_t>(output_capacity(config)));
  const int64_t blocks_per_seq = (int64_t{model.config().max_seq_len} + cache.block_size() - 1) / cache.block_size();
  const size_t table_capacity = static_cast<size_t>(std::min<int64_t>(blocks_per_seq, cache.num_blocks()));
  spare_tables_.resize(max_seqs);
  for (std::vector<int32_t>& table : spare_tables_) table.reserve(table_capacity);
  if (cache.num_window_slots() > 0) {
    window_ = std::make_unique<WindowSlots>(cache.num_window_slots(), cache.num_blocks(), cache.block_size(),
                                            model.config().sliding_window);
    spare_window_tables_.resize(max_seqs);
    // Sized once: a chunk's span of it stays valid as the window moves on.
    for (std::vector<int32_t>& table : spare_window_tables_) table.assign(table_capacity, 0);
  }
  // A device model's own streams are not ready for a pass in flight while
  // the engine plans the next.
  if (config.overlap_scheduling && config.device.kind == Device::Kind::kCpu)
    runner_ = std::make_unique<ForwardRunner>(model, cache);
}

void EngineCore::lend_tables(Sequence* seq) {
  CHECK(!spare_tables_.empty()) << "more running sequences than max_num_seqs";
  seq->blocks.table = std::move(spare_tables_.back());
  spare_tables_.pop_back();
  if (!window_) return;
  seq->window.slots = std::move(spare_window_tables_.back());
  spare_window_tables_.pop_back();
}

// The blocks must be released (the table empty, its capacity kept), and the window.
void EngineCore::take_back_tables(Sequence* seq) {
  spare_tables_.push_back(std::move(seq->blocks.table));
  seq->blocks.table = {};
  if (!window_) return;
  spare_window_tables_.push_back(std::move(seq->window.slots));
  seq->window.slots = {};
}

void EngineCore::insert_waiting(std::unique_ptr<Sequence> seq) {
  seq->state = SeqState::kWaiting;
  auto at = std::upper_bound(waiting_.begin(), waiting_.end(), seq, admitted_later);
  waiting_.insert(at, std::move(seq));
}

void EngineCore::enqueue(std::unique_ptr<Sequence> seq) {
  seq->arrival = next_arrival_++;
  seq->trace.on_enqueue(Clock::now(), admit_round_);
  insert_waiting(std::move(seq));
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
  for (auto& seq : running_)
    if (seq->id == id && seq->state == SeqState::kRunning) finish(seq.get(), reason, detail, now);
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if ((*it)->id == id) {
      finish(it->get(), reason, detail, now);
      output_->push_retire(it->release());
      waiting_.erase(it);
      break;
    }
  }
  reap_finished();
}

void EngineCore::abort_all() {
  if (pass_running()) {  // its results are not needed
    runner_->wait();
    committed_plan_ = inflight_->id;
  }
  Clock::time_point now = Clock::now();
  for (auto& seq : running_)
    if (seq->state == SeqState::kRunning) finish(seq.get(), FinishReason::kAborted, "engine shut down", now);
  for (auto& seq : waiting_) {
    finish(seq.get(), FinishReason::kAborted, "engine shut down", now);
    output_->push_retire(seq.release());
  }
  waiting_.clear();
  reap_finished();
  publish();
}

// Hands the step's records to the output stage. Inline (no stage thread),
// stop strings found while delivering end their requests right here.
void EngineCore::publish() {
  output_->publish();
  while (!pending_stops_.empty()) {
    const RequestId id = pending_stops_.back();
    pending_stops_.pop_back();
    finish_by_id(id, FinishReason::kStop, "stop string");
    output_->publish();
  }
}

void EngineCore::admit_waiting(bool may_compact) {
  ++admit_round_;
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    Sequence* seq = waiting_.back().get();
    lend_tables(seq);  // a spare exists: fewer than max_num_seqs run
    // Window slots are checked first: compaction cannot make room there.
    const bool slots = window_admits(seq);
    AdmitOutcome outcome = slots ? pool_.admit(seq->tokens, seq->max_total_tokens, seq->salt, &seq->blocks, window_.get())
                                 : AdmitOutcome::kWait;
    if (slots && outcome == AdmitOutcome::kWait && !may_compact && pool_.compaction_may_help(seq->max_total_tokens))
      need_drain_ = true;
    else if (slots && outcome == AdmitOutcome::kWait && compact_for(seq->max_total_tokens))
      outcome = pool_.admit(seq->tokens, seq->max_total_tokens, seq->salt, &seq->blocks, window_.get());
    if (outcome != AdmitOutcome::kAdmitted) take_back_tables(seq);
    if (outcome == AdmitOutcome::kWait) break;
    Clock::time_point now = Clock::now();
    if (outcome == AdmitOutcome::kNeverFits) {  // submit checks this; kept for safety
      finish(seq, FinishReason::kError, "the request does not fit the KV pool", now);
      output_->push_retire(waiting_.back().release());
      waiting_.pop_back();
      continue;
    }
    if (window_) window_->admit(seq->blocks, seq->window);
    seq->num_computed = seq->blocks.num_prefix_tokens;
    // The cache gave all but its last token: it decodes at once, so the next
    // batch is built anew with it among the decodes.
    if (seq->num_pending() == 1) rows_kept_ = false;
    seq->state = SeqState::kRunning;
    seq->trace.on_admit(now, admit_round_, seq->submitted_at, seq->first_token_at != Clock::time_point());
    if (!seq->admitted_once) {
      seq->admitted_once = true;
      seq->admitted_at = now;
      seq->num_cached_prompt_tokens = seq->blocks.num_prefix_tokens;
      metrics_.prompt_tokens_total += seq->num_prompt_tokens;
    }
    running_.push_back(std::move(waiting_.back()));
    waiting_.pop_back();
  }
}

// When a contiguous extent does not fit although enough blocks are free or
// cached, the free space is scattered: slide the running extents together
// and copy their KV. Returns whether anything moved.
bool EngineCore::compact_for(int32_t max_total_tokens) {
  if (!pool_.compaction_may_help(max_total_tokens)) return false;
  live_scratch_.clear();
  for (auto& seq : running_) live_scratch_.push_back(&seq->blocks);
  const int32_t needed = (max_total_tokens + cache_.block_size() - 1) / cache_.block_size();
  pool_.compact(live_scratch_, needed, &moves_);
  for (const BlockMove& move : moves_) {
    cache_.copy_block(move.src, move.dst);
    if (window_) window_->move_block(move.src, move.dst);
  }
  if (!moves_.empty()) rows_kept_ = false;  // the kept rows' block tables changed
  return !moves_.empty();
}

bool EngineCore::reserve(Sequence* seq, int32_t num_tokens) {
  // Most calls (every decode under contiguous) are already covered.
  return num_tokens <= seq->blocks.num_reserved_tokens || pool_.ensure_capacity(seq->blocks, num_tokens);
}

// The rest of a sequence's completed blocks, before it gives them up: signed
// blocks stay cached for later prompts (update() may have left some unsigned).
void EngineCore::sign_all(Sequence* seq) {
  pool_.commit(seq->blocks, seq->tokens, seq->blocks.num_computed_tokens);
}

void EngineCore::preempt_last() {
  CHECK(may_preempt_last()) << "preemption would free blocks a running pass writes";
  rows_kept_ = false;
  std::unique_ptr<Sequence> victim = std::move(running_.back());
  running_.pop_back();
  sign_all(victim.get());
  release_window(victim.get());
  pool_.release(victim->blocks);
  take_back_tables(victim.get());
  victim->trace.on_preempt(last_forward_end_);
  victim->num_computed = 0;
  victim->num_preemptions++;
  metrics_.num_preemptions++;
  insert_waiting(std::move(victim));
}

void EngineCore::add_to_batch(Sequence* seq, int32_t start, int32_t num_tokens, int32_t feed_row) {
  const int32_t begin = static_cast<int32_t>(plan_->tokens.size());
  const auto first = seq->tokens.begin() + start;
  if (feed_row >= 0) {
    plan_->feeds.push_back(FeedRow{begin, feed_row});
    plan_->tokens.push_back(0);  // the runner writes it before the pass
  } else if (num_tokens == 1) {
    plan_->tokens.push_back(*first);  // a decode: cheaper than a range insert
  } else {
    plan_->tokens.insert(plan_->tokens.end(), first, first + num_tokens);
  }
  prepare_window(seq, start, num_tokens);
  plan_->chunks.push_back(SeqChunk{begin, num_tokens, start, seq->blocks.table, seq->window.slots});
  if (feed_row >= 0 || start + num_tokens == static_cast<int32_t>(seq->tokens.size())) {
    if (!seq->plain_greedy) plan_->sampled.push_back(SampledRow{static_cast<int32_t>(plan_->rows.size()), &seq->sampler});
    plan_->rows.push_back(begin + num_tokens - 1);
    plan_->row_seqs.push_back(seq);
  }
  plan_->scheduled.push_back(Scheduled{seq, num_tokens});
}

void EngineCore::schedule() {
  const int32_t budget = config_.max_num_batched_tokens;
  plan_->reused = rows_kept_ && plan_->num_decode_rows > 0 && static_cast<int32_t>(plan_->num_decode_rows) <= budget;
  plan_->feeds.clear();
  if (plan_->reused) {
    // Rows [0, plan_->num_decode_rows) are every running sequence that decodes,
    // advanced by update(); the rest of running_ prefills.
    if (running_.size() > plan_->num_decode_rows) add_prefill_chunks(budget - static_cast<int32_t>(plan_->num_decode_rows));
    return;
  }
  plan_->tokens.clear();
  plan_->chunks.clear();
  plan_->rows.clear();
  plan_->row_seqs.clear();
  plan_->scheduled.clear();
  plan_->sampled.clear();
  int32_t left = budget;
  // Decodes first. A decode that finds no block preempts the latest admitted
  // sequence (possibly itself); running_ only shrinks from the back here.
  // With a pass in flight, a sequence's state is taken as after that pass:
  // a row that samples there decodes here on the token it will sample (the
  // runner draws it right after that pass).
  size_t i = 0;
  for (; i < running_.size() && left > 0; ++i) {
    Sequence* seq = running_[i].get();
    if (seq->state != SeqState::kRunning) continue;  // finished, its pass still running
    const bool fed = in_flight(seq) && seq->plan_row >= 0;
    if (fed) {
      // Its in-flight row samples its last token: it finishes by length.
      if (static_cast<int32_t>(seq->tokens.size()) + 1 >= seq->max_total_tokens) continue;
      const int32_t start = seq->num_computed + seq->plan_tokens;
      if (!reserve(seq, start + 1)) {  // paged: no block; preempt once the pass has ended
        need_drain_ = true;
        continue;
      }
      add_to_batch(seq, start, 1, seq->plan_row);
      left -= 1;
      continue;
    }
    if (seq->num_pending() - (in_flight(seq) ? seq->plan_tokens : 0) != 1) continue;
    bool has_room = reserve(seq, static_cast<int32_t>(seq->tokens.size()));
    while (!has_room && running_.back().get() != seq && may_preempt_last()) {
      preempt_last();
      has_room = reserve(seq, static_cast<int32_t>(seq->tokens.size()));
    }
    if (!has_room && !may_preempt_last()) {  // the victim is in the running pass: after it
      need_drain_ = true;
      continue;
    }
    if (!has_room) {
      preempt_last();  // seq itself is last
      break;
    }
    add_to_batch(seq, static_cast<int32_t>(seq->tokens.size()) - 1, 1);
    left -= 1;
  }
  plan_->num_decode_rows = plan_->scheduled.size();
  // The loop stops early only for the budget (or after preempting the last).
  plan_->all_decoders_scheduled = left > 0 || i >= running_.size();
  add_prefill_chunks(left);
  // Paged pools can deadlock with every sequence mid-prefill and no block
  // free: then give the latest admitted sequence's memory to the others.
  // (Not while a pass runs: its sequences' blocks must stay.)
  if (plan_->scheduled.empty() && running_.size() > 1 && !pass_running()) preempt_last();
}

// The latest admitted sequence may give its blocks up: no pass it is in
// still runs (a sequence that finished meanwhile goes in reap_finished()).
bool EngineCore::may_preempt_last() const {
  const Sequence* last = running_.back().get();
  return last->state == SeqState::kRunning && !in_flight(last);
}

// Prefill chunks in admission order with what is left of the budget.
void EngineCore::add_prefill_chunks(int32_t budget) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* seq = running_[i].get();
    if (seq->state != SeqState::kRunning || (in_flight(seq) && seq->plan_row >= 0)) continue;
    const int32_t start = seq->num_computed + (in_flight(seq) ? seq->plan_tokens : 0);
    const int32_t pending = static_cast<int32_t>(seq->tokens.size()) - start;
    if (pending <= 1) continue;
    int32_t chunk = std::min(pending, budget);
    if (window_) chunk = window_->max_chunk(seq->window, start, chunk);
    if (!reserve(seq, start + chunk)) continue;  // wait for memory
    add_to_batch(seq, start, chunk);
    budget -= chunk;
  }
}

void EngineCore::step() {
  if (pass_running()) return step_overlapped();
  need_drain_ = false;
  admit_waiting(/*may_compact=*/true);
  schedule();
  if (plan_->scheduled.empty()) return;
  prepare_job(*plan_);
  if (runner_) {
    submit_plan();  // the next step plans beside it
    std::swap(plan_, inflight_);
    return;
  }
  run_forward_job(model_, cache_, plan_->job);
  finish_pass(plan_->job);
}

// A pass runs on the runner. Plan the next as if it had ended (schedule()
// reads in_flight()), queue it behind, then wait for the running pass and
// update it: the next pass starts on its tokens (drawn by the runner for
// sampled rows) at once, and this bookkeeping runs beside it. An admission
// waiting for compaction (which moves KV blocks) updates the running pass
// first instead, with nothing queued.
void EngineCore::step_overlapped() {
  if (!need_drain_) {
    admit_waiting(/*may_compact=*/false);
    schedule();
    if (!plan_->scheduled.empty()) {
      prepare_job(*plan_);
      submit_plan();
    }
  }
  std::swap(plan_, inflight_);  // plan_: the pass that is ending
  const ForwardJob* job = runner_->wait();
  CHECK(job == &plan_->job) << "the runner returned passes out of order";
  finish_pass(*job);
}

// Points plan's job at its batch and result buffers.
void EngineCore::prepare_job(StepPlan& plan) {
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

// Hands plan_ to the runner and stamps its sequences with the pass's number
// (see in_flight(): schedule() plans past the pass, reap_finished() keeps
// their blocks until it ends).
void EngineCore::submit_plan() {
  StepPlan& plan = *plan_;
  rows_kept_ = false;  // plans alternate between two buffers from now on
  plan.id = ++next_plan_id_;
  for (const Scheduled& s : plan.scheduled) {
    s.seq->plan_id = plan.id;
    s.seq->plan_tokens = s.num_tokens;
    s.seq->plan_row = -1;
  }
  for (size_t row = 0; row < plan.row_seqs.size(); ++row) plan.row_seqs[row]->plan_row = static_cast<int32_t>(row);
  metrics_.num_overlapped_passes += pass_running();
  runner_->submit(&plan.job);
}

// plan_'s pass has ended (here or on the runner): record it, commit and
// sample its rows, give finished sequences' blocks back, publish.
void EngineCore::finish_pass(const ForwardJob& job) {
  metrics_.record_pass(have_last_forward_, nanos_between(last_forward_end_, job.start), plan_->scheduled.size(),
                       plan_->tokens.size());
  if (!job.status.ok()) {
    for (const Scheduled& s : plan_->scheduled)
      if (s.seq->state == SeqState::kRunning) finish(s.seq, FinishReason::kError, job.status.message().c_str(), job.end);
  } else {
    update(job.end);
  }
  committed_plan_ = std::max(committed_plan_, plan_->id);
  reap_finished();
  publish();
  // The gap (without overlap: sampling, publishing, scheduling; with it,
  // the runner's start of the queued pass) is measured only between
  // back-to-back steps, never across idle time.
  have_last_forward_ = has_work();
  last_forward_end_ = job.end;
}

void EngineCore::update(Clock::time_point now) {
  constexpr size_t kRowsAhead = 16;
  const size_t num_rows = plan_->row_seqs.size();
  for (size_t row = 0; row < std::min(num_rows, kRowsAhead); ++row) prefetch_row_state(row);
  for (size_t row = 0; row < std::min(num_rows, kRowsAhead / 2); ++row) prefetch_token_slot(row);
  output_->prefetch_pushes(static_cast<uint32_t>(num_rows));
  metrics_.request_log.on_step(now);
  to_sign_.clear();
  // Rows are kept only when no pass runs (plans alternate buffers then), and
  // rows whose sequence finished while their pass ran are skipped.
  bool keep = plan_->all_decoders_scheduled && !pass_running();
  // A decode row is committed and sampled in one visit, while its lines are
  // in L1; the prefill chunks after the decodes are committed first.
  for (size_t i = plan_->num_decode_rows; i < plan_->scheduled.size(); ++i) {
    if (plan_->scheduled[i].seq->state != SeqState::kRunning) continue;
    commit_computed(plan_->scheduled[i], now);
    // A chunk that stopped one token short of the prompt's end leaves a
    // sequence that decodes next with no row to keep: build the batch anew.
    if (plan_->scheduled[i].seq->num_pending() == 1) keep = false;
  }
  // The pass drew the sampled rows' tokens; the list is rebuilt for the next.
  plan_->sampled.clear();
  // Kept decode rows all sampled their last token when the previous forward
  // pass ended: one inter-token time for all of them.
  const size_t num_kept = plan_->reused ? plan_->num_decode_rows : 0;
  const int64_t generated_before = metrics_.generation_tokens_total;
  int64_t kept_generated = 0;
  size_t next_rows = 0;
  for (size_t row = 0; row < num_rows; ++row) {
    if (row + kRowsAhead < num_rows) prefetch_row_state(row + kRowsAhead);
    if (row + kRowsAhead / 2 < num_rows) prefetch_token_slot(row + kRowsAhead / 2);
    if (plan_->row_seqs[row]->state != SeqState::kRunning) continue;
    if (row < plan_->num_decode_rows) commit_decode(plan_->scheduled[row], now);
    sample_next(row, now, row >= num_kept);
    if (row + 1 == num_kept) kept_generated = metrics_.generation_tokens_total - generated_before;
    if (keep) keep = keep_row(row, &next_rows);
  }
  if (num_kept > 0)
    metrics_.inter_token_ns.record(nanos_between(last_forward_end_, now), static_cast<uint64_t>(kept_generated));
  sign_queued();
  // finish() above cleared rows_kept_; the rows kept here leave out its rows.
  rows_kept_ = keep;
  if (!keep) return;
  plan_->tokens.resize(next_rows);
  plan_->chunks.resize(next_rows);
  plan_->rows.resize(next_rows);
  plan_->row_seqs.resize(next_rows);
  plan_->scheduled.resize(next_rows);
  plan_->num_decode_rows = next_rows;
}

// Row `row`'s sequence has just sampled, so if it still runs it decodes
// next: its next decode, as schedule() would make it, becomes row *next_rows
// (<= row: rows only move down, in row order, so none is overwritten before
// update() reads it). False when a paged table must grow first: then
// schedule() builds the next batch anew.
bool EngineCore::keep_row(size_t row, size_t* next_rows) {
  Sequence* seq = plan_->row_seqs[row];
  if (seq->state != SeqState::kRunning) return true;
  if (static_cast<int32_t>(seq->tokens.size()) > seq->blocks.num_reserved_tokens) return false;
  const size_t k = (*next_rows)++;
  if (!seq->plain_greedy) plan_->sampled.push_back(SampledRow{static_cast<int32_t>(k), &seq->sampler});
  prepare_window(seq, seq->num_computed, 1);
  plan_->tokens[k] = seq->tokens.back();
  if (k == row && row < plan_->num_decode_rows) {  // a decode row staying where it is
    plan_->chunks[k].start_pos = seq->num_computed;
    return true;
  }
  plan_->chunks[k] = SeqChunk{static_cast<int32_t>(k), 1, seq->num_computed, seq->blocks.table, seq->window.slots};
  plan_->rows[k] = static_cast<int32_t>(k);
  plan_->row_seqs[k] = seq;
  plan_->scheduled[k] = Scheduled{seq, 1};
  return true;
}

// The step computed s.num_tokens more of s.seq: tell the pool (prompt blocks
// are signed now, a decode block is queued for sign_queued()).
void EngineCore::commit_computed(const Scheduled& s, Clock::time_point now) {
  Sequence* seq = s.seq;
  if (seq->num_generated() == 0) seq->trace.on_prefill_chunk(s.num_tokens, now, metrics_.request_log.num_steps());
  const bool prompt_chunk = seq->num_computed < seq->num_prompt_tokens;
  seq->num_computed += s.num_tokens;
  pool_.commit(seq->blocks, seq->tokens, seq->num_computed, prompt_chunk ? INT32_MAX : 0);
  if (!prompt_chunk) queue_signing_if_due(seq);
  // Read prefilled_at (a cold line) only in the step that completes the prompt.
  const bool prompt_done = seq->num_computed >= seq->num_prompt_tokens;
  if (prompt_done && seq->num_computed - s.num_tokens < seq->num_prompt_tokens && seq->prefilled_at == Clock::time_point())
    seq->prefilled_at = now;
}

// commit_computed() for a decode row, short for the common case: a token
// after the prompt (whose blocks are signed a few a step, as computed).
void EngineCore::commit_decode(const Scheduled& s, Clock::time_point now) {
  Sequence* seq = s.seq;
  if (seq->num_computed < seq->num_prompt_tokens) return commit_computed(s, now);  // the prompt's last token
  ++seq->num_computed;
  pool_.commit_decode(seq->blocks);
  queue_signing_if_due(seq);
}

// A decode that completed a block queues it, while the step has room.
void EngineCore::queue_signing_if_due(Sequence* seq) {
  if (static_cast<int32_t>(to_sign_.size()) < signs_per_step_ && pool_.has_block_to_sign(seq->blocks))
    queue_signing(seq);
}

// Signing a block reads its tokens, its table entry, the sequence's salt, the
// prefix index and the pool's entry for the block: cache and TLB misses after
// a forward pass (~0.6 µs a block when met one after another), and sequences
// decoding in step with each other complete their blocks in the same step.
// So update() signs prompt blocks at once (requests arriving now may share
// them) and queues decode blocks, which are signed here, after sampling:
// first lines prefetched meanwhile, then hashed (prefetching the index slot
// and block entry), then indexed, at most signs_per_step_ a step: as many as
// max_num_seqs decodes complete on average, so any backlog waits a few steps
// (finish and preemption sign what is left).
void EngineCore::queue_signing(Sequence* seq) {
  const SeqBlocks& blocks = seq->blocks;
  const auto next = static_cast<size_t>(blocks.num_signed_blocks);
  __builtin_prefetch(blocks.table.data() + next);
  __builtin_prefetch(seq->tokens.data() + next * static_cast<size_t>(cache_.block_size()));
  __builtin_prefetch(&blocks.salt);
  to_sign_.push_back(seq);
}

void EngineCore::sign_queued() {
  prepared_signs_.clear();
  for (Sequence* seq : to_sign_)
    if (seq->state == SeqState::kRunning) prepared_signs_.push_back(pool_.prepare_sign(seq->blocks, seq->tokens));
  for (const KvPool::PreparedSign& sign : prepared_signs_) pool_.apply_sign(sign);
}

// Row `row` of plan_ has its next token (the argmax, or its sampler's draw,
// made with the pass): end the sequence on it, or append and publish it.
void EngineCore::sample_next(size_t row, Clock::time_point now, bool record_inter_token) {
  Sequence* seq = plan_->row_seqs[row];
  const int32_t token = plan_->next_tokens[row];
  float logprob = 0.0f;
  std::span<const TokenLogprob> top;
  if (!seq->plain_greedy) {
    const RowSample& sample = plan_->samples[row];
    logprob = sample.logprob;
    top = {&plan_->top[row * kMaxTopLogprobs], static_cast<size_t>(sample.num_top)};
  }
  if (seq->num_generated() == 0 && seq->first_token_at == Clock::time_point()) seq->first_token_at = now;
  bool is_eos = !seq->ignore_eos && std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
  if (seq->has_stop_token_ids) {
    const std::vector<int32_t>& ids = seq->request.stop_token_ids;
    is_eos |= std::find(ids.begin(), ids.end(), token) != ids.end();
  }
  if (is_eos || (seq->min_token_prob > 0.0f && std::exp(logprob) < seq->min_token_prob))
    return finish(seq, FinishReason::kStop, is_eos ? "eos" : "min_token_prob", now);
  seq->tokens.push_back(token);
  if (record_inter_token && seq->last_token_at != Clock::time_point())
    metrics_.inter_token_ns.record(nanos_between(seq->last_token_at, now));
  seq->last_token_at = now;
  metrics_.generation_tokens_total++;
  // Text and stop strings are the output stage's (engine/output_stage.h).
  output_->push_token(seq->output.get(), token, logprob, top);
  if (static_cast<int32_t>(seq->tokens.size()) >= seq->max_total_tokens) finish(seq, FinishReason::kLength, "length", now);
}

void EngineCore::finish(Sequence* seq, FinishReason reason, const char* detail, Clock::time_point now) {
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
  if (held_blocks) {  // reap_finished() releases its blocks, then pushes its finish
    rows_kept_ = false;  // its row, if any, is stale; update() keeps the rows anew
    sign_all(seq);
  }
  seq->state = SeqState::kFinished;
  any_finished_ = true;
  metrics_.record_finish(*seq, reason, now);
  // A finish event means its memory is free: a sequence that held blocks
  // has its event pushed by reap_finished(), after it gives them back (and
  // after any pass still writing its KV has ended). Pushed here, it could be
  // delivered before that, when the output ring fills later in the step.
  if (!held_blocks) output_->push_finish(seq->output.release());
}

// The forward pass has streamed the KV cache through every cache level, so
// each row's sequence state is a miss: its first line, its blocks' line and
// the end of its token list (which the first line points to). update() asks
// for a row's first two lines kRowsAhead rows before it reaches the row, and
// for the token slot kRowsAhead / 2 rows before, so the misses overlap the
// work on the rows in between. (A pass asking for every row's lines before
// any work only waited on them: 12 µs of a 45 µs gap at 256 sequences.)
void EngineCore::prefetch_row_state(size_t row) const {
  const Sequence* seq = plan_->row_seqs[row];
  __builtin_prefetch(seq, 1);
  __builtin_prefetch(&seq->blocks, 1);
}

void EngineCore::prefetch_token_slot(size_t row) const {
  const Sequence* seq = plan_->row_seqs[row];
  __builtin_prefetch(seq->tokens.data() + seq->tokens.size(), 1);
}

// Finished sequences leave running_ here, not in finish(), so that the
// step's loops over raw pointers stay valid; the output stage frees them.
// Their blocks go back to the pool here too, all of a step's at once: the
// 126 sequences of a finish wave at 256 took ~0.5 µs each so, against ~1.5
// µs each one by one (KvPool::release(span) coalesces their runs).
void EngineCore::reap_finished() {
  if (!any_finished_) return;
  any_finished_ = false;
  releasing_.clear();
  for (auto& seq : running_) {
    if (seq->state != SeqState::kFinished) continue;
    if (in_flight(seq.get())) {
      any_finished_ = true;  // a running pass still writes its KV: next time
      continue;
    }
    release_window(seq.get());
    releasing_.push_back(&seq->blocks);
  }
  pool_.release(releasing_);
  auto kept = running_.begin();
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if ((*it)->state == SeqState::kFinished && !in_flight(it->get())) {
      take_back_tables(it->get());
      if ((*it)->output) output_->push_finish((*it)->output.release());
      output_->push_retire(it->release());
    } else {
      if (kept != it) *kept = std::move(*it);
      ++kept;
    }
  }
  running_.erase(kept, running_.end());
}

EngineStats EngineCore::stats() const {
  EngineStats s;
  s.num_running = num_running();
  s.num_waiting = num_waiting();
  metrics_.fill(s);
  s.kv = pool_.stats();
  if (window_) {
    const WindowSlotStats w = window_->stats();
    s.window_slots = w.num_slots;
    s.window_slots_pinned = w.num_pinned;
    s.window_slots_cached = w.num_cached;
  }
  return s;
}

std::vector<const SeqBlocks*> EngineCore::live_blocks() const {
  std::vector<const SeqBlocks*> live;
  for (const auto& seq : running_) live.push_back(&seq->blocks);
  return live;
}

}  // namespace zl
