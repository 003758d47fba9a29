#include "engine/postprocess.h"

#include <algorithm>
#include <cmath>

namespace zl {

Postprocess::Postprocess(EngineState& state, int32_t block_size, std::vector<int32_t> eos_ids)
    : state_(state),
      block_size_(block_size),
      eos_ids_(std::move(eos_ids)),
      // As many as max_num_seqs decodes complete on average.
      signs_per_step_((state.config.max_num_seqs + block_size - 1) / block_size) {
  to_sign_.reserve(static_cast<size_t>(signs_per_step_));
  prepared_signs_.reserve(static_cast<size_t>(signs_per_step_));
}

void Postprocess::finish_pass(StepPlan& plan, bool pass_running) {
  plan_ = &plan;
  const ForwardJob& job = plan.job;
  EngineMetrics& metrics = state_.metrics;
  if (!plan.tokens.empty())  // else the pass only copied KV (compaction)
    metrics.record_pass(state_.have_last_forward, nanos_between(state_.last_forward_end, job.start),
                        plan.scheduled.size(), plan.tokens.size());
  metrics.compaction_copy_ns_total += job.copy_ns;
  metrics.compaction_copy_ns_max = std::max(metrics.compaction_copy_ns_max, job.copy_ns);
  if (!job.status.ok()) {
    for (const Scheduled& s : plan.scheduled)
      if (s.seq->state == SeqState::kRunning) state_.finish(s.seq, FinishReason::kError, job.status.message().c_str(), job.end);
  } else {
    update(job.end, pass_running);
  }
  state_.committed_plan = std::max(state_.committed_plan, plan.id);
  state_.reap_finished();
}

void Postprocess::update(Clock::time_point now, bool pass_running) {
  StepPlan& plan = *plan_;
  EngineMetrics& metrics = state_.metrics;
  constexpr size_t kRowsAhead = 16;
  const size_t num_rows = plan.row_seqs.size();
  for (size_t row = 0; row < std::min(num_rows, kRowsAhead); ++row) prefetch_row_state(row);
  for (size_t row = 0; row < std::min(num_rows, kRowsAhead / 2); ++row) prefetch_token_slot(row);
  state_.output.prefetch_pushes(static_cast<uint32_t>(num_rows));
  metrics.request_log.on_step(now);
  to_sign_.clear();
  // Rows are kept only when no pass runs (plans alternate buffers then), and
  // rows whose sequence finished while their pass ran are skipped.
  bool keep = plan.all_decoders_scheduled && !pass_running;
  // A decode row is committed and takes its token in one visit, while its
  // lines are in L1; the prefill chunks after the decodes are committed first.
  for (size_t i = plan.num_decode_rows; i < plan.scheduled.size(); ++i) {
    if (plan.scheduled[i].seq->state != SeqState::kRunning) continue;
    commit_computed(plan.scheduled[i], now);
    // A chunk that stopped one token short of the prompt's end leaves a
    // sequence that decodes next with no row to keep: build the batch anew.
    if (plan.scheduled[i].seq->num_pending() == 1) keep = false;
  }
  // The pass drew the sampled rows' tokens; the list is rebuilt for the next.
  plan.sampled.clear();
  // Kept decode rows all took their last token when the previous forward
  // pass ended: one inter-token time for all of them.
  const size_t num_kept = plan.reused ? plan.num_decode_rows : 0;
  const int64_t generated_before = metrics.generation_tokens_total;
  int64_t kept_generated = 0;
  size_t next_rows = 0;
  for (size_t row = 0; row < num_rows; ++row) {
    if (row + kRowsAhead < num_rows) prefetch_row_state(row + kRowsAhead);
    if (row + kRowsAhead / 2 < num_rows) prefetch_token_slot(row + kRowsAhead / 2);
    if (plan.row_seqs[row]->state != SeqState::kRunning) continue;
    if (row < plan.num_decode_rows) commit_decode(plan.scheduled[row], now);
    take_token(row, now, row >= num_kept);
    if (row + 1 == num_kept) kept_generated = metrics.generation_tokens_total - generated_before;
    if (keep) keep = keep_row(row, &next_rows);
  }
  if (num_kept > 0)
    metrics.inter_token_ns.record(nanos_between(state_.last_forward_end, now), static_cast<uint64_t>(kept_generated));
  sign_queued();
  // A finish above cleared rows_kept; the rows kept here leave out its rows.
  state_.rows_kept = keep;
  if (!keep) return;
  plan.tokens.resize(next_rows);
  plan.chunks.resize(next_rows);
  plan.rows.resize(next_rows);
  plan.row_seqs.resize(next_rows);
  plan.scheduled.resize(next_rows);
  plan.num_decode_rows = next_rows;
}

// Row `row`'s sequence has just taken its token, so if it still runs it
// decodes next: its next decode, as the scheduler would make it, becomes row
// *next_rows (<= row: rows only move down, in row order, so none is
// overwritten before update() reads it). False when a paged table must grow
// first: then the scheduler builds the next batch anew.
bool Postprocess::keep_row(size_t row, size_t* next_rows) {
  StepPlan& plan = *plan_;
  Sequence* seq = plan.row_seqs[row];
  if (seq->state != SeqState::kRunning) return true;
  if (static_cast<int32_t>(seq->tokens.size()) > seq->blocks.num_reserved_tokens) return false;
  const size_t k = (*next_rows)++;
  if (!seq->plain_greedy) plan.sampled.push_back(SampledRow{static_cast<int32_t>(k), &seq->sampler});
  state_.prepare_window(seq, seq->num_computed, 1);
  plan.tokens[k] = seq->tokens.back();
  if (k == row && row < plan.num_decode_rows) {  // a decode row staying where it is
    plan.chunks[k].start_pos = seq->num_computed;
    return true;
  }
  plan.chunks[k] = SeqChunk{static_cast<int32_t>(k), 1, seq->num_computed, seq->blocks.table, seq->window.slots};
  plan.rows[k] = static_cast<int32_t>(k);
  plan.row_seqs[k] = seq;
  plan.scheduled[k] = Scheduled{seq, 1};
  return true;
}

// The pass computed s.num_tokens more of s.seq: tell the pool (prompt blocks
// are signed now, a decode block is queued for sign_queued()).
void Postprocess::commit_computed(const Scheduled& s, Clock::time_point now) {
  Sequence* seq = s.seq;
  if (seq->num_generated() == 0) seq->trace.on_prefill_chunk(s.num_tokens, now, state_.metrics.request_log.num_steps());
  const bool prompt_chunk = seq->num_computed < seq->num_prompt_tokens;
  seq->num_computed += s.num_tokens;
  state_.pool.commit(seq->blocks, seq->tokens, seq->num_computed, prompt_chunk ? INT32_MAX : 0);
  if (!prompt_chunk) queue_signing_if_due(seq);
  // Read prefilled_at (a cold line) only in the step that completes the prompt.
  const bool prompt_done = seq->num_computed >= seq->num_prompt_tokens;
  if (prompt_done && seq->num_computed - s.num_tokens < seq->num_prompt_tokens && seq->prefilled_at == Clock::time_point())
    seq->prefilled_at = now;
}

// commit_computed() for a decode row, short for the common case: a token
// after the prompt (whose blocks are signed a few a step, as computed).
void Postprocess::commit_decode(const Scheduled& s, Clock::time_point now) {
  Sequence* seq = s.seq;
  if (seq->num_computed < seq->num_prompt_tokens) return commit_computed(s, now);  // the prompt's last token
  ++seq->num_computed;
  state_.pool.commit_decode(seq->blocks);
  queue_signing_if_due(seq);
}

// A decode that completed a block queues it, while the step has room.
void Postprocess::queue_signing_if_due(Sequence* seq) {
  if (static_cast<int32_t>(to_sign_.size()) < signs_per_step_ && state_.pool.has_block_to_sign(seq->blocks))
    queue_signing(seq);
}

// Signing a block reads its tokens, its table entry, the sequence's salt, the
// prefix index and the pool's entry for the block: cache and TLB misses after
// a forward pass (~0.6 µs a block when met one after another), and sequences
// decoding in step with each other complete their blocks in the same step.
// So update() signs prompt blocks at once (requests arriving now may share
// them) and queues decode blocks, which are signed here, after the tokens:
// first lines prefetched meanwhile, then hashed (prefetching the index slot
// and block entry), then indexed, at most signs_per_step_ a step, so any
// backlog waits a few steps (finish and preemption sign what is left).
void Postprocess::queue_signing(Sequence* seq) {
  const SeqBlocks& blocks = seq->blocks;
  const auto next = static_cast<size_t>(blocks.num_signed_blocks);
  __builtin_prefetch(blocks.table.data() + next);
  __builtin_prefetch(seq->tokens.data() + next * static_cast<size_t>(block_size_));
  __builtin_prefetch(&blocks.salt);
  to_sign_.push_back(seq);
}

void Postprocess::sign_queued() {
  prepared_signs_.clear();
  for (Sequence* seq : to_sign_)
    if (seq->state == SeqState::kRunning) prepared_signs_.push_back(state_.pool.prepare_sign(seq->blocks, seq->tokens));
  for (const KvPool::PreparedSign& sign : prepared_signs_) state_.pool.apply_sign(sign);
}

// Row `row` of the plan has its next token (the argmax, or its sampler's
// draw, made with the pass): end the sequence on it, or append and push it.
void Postprocess::take_token(size_t row, Clock::time_point now, bool record_inter_token) {
  const StepPlan& plan = *plan_;
  Sequence* seq = plan.row_seqs[row];
  const int32_t token = plan.next_tokens[row];
  float logprob = 0.0f;
  std::span<const TokenLogprob> top;
  GrammarStep grammar = GrammarStep::kNone;
  if (!seq->plain_greedy) {
    const RowSample& sample = plan.samples[row];
    logprob = sample.logprob;
    top = {&plan.top[row * kMaxTopLogprobs], static_cast<size_t>(sample.num_top)};
    grammar = sample.grammar;
  }
  if (seq->num_generated() == 0 && seq->first_token_at == Clock::time_point()) seq->first_token_at = now;
  bool is_eos = !seq->ignore_eos && std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
  if (seq->has_stop_token_ids) {
    const std::vector<int32_t>& ids = seq->request.stop_token_ids;
    is_eos |= std::find(ids.begin(), ids.end(), token) != ids.end();
  }
  // A grammar ends on a stop id it allows, ignore_eos or not.
  if (grammar == GrammarStep::kRejected)
    return state_.finish(seq, FinishReason::kError, "the structured output's grammar rejected the sampled token", now);
  is_eos |= grammar == GrammarStep::kEnded;
  if (is_eos) seq->output->finish.stop_token = token;
  if (is_eos || (seq->min_token_prob > 0.0f && std::exp(logprob) < seq->min_token_prob))
    return state_.finish(seq, FinishReason::kStop, is_eos ? "eos" : "min_token_prob", now);
  seq->tokens.push_back(token);
  EngineMetrics& metrics = state_.metrics;
  if (record_inter_token && seq->last_token_at != Clock::time_point())
    metrics.inter_token_ns.record(nanos_between(seq->last_token_at, now));
  seq->last_token_at = now;
  metrics.generation_tokens_total++;
  // Text and stop strings are the output stage's (engine/output_stage.h).
  state_.output.push_token(seq->output.get(), token, logprob, top);
  if (static_cast<int32_t>(seq->tokens.size()) >= seq->max_total_tokens)
    state_.finish(seq, FinishReason::kLength, "length", now);
}

// The forward pass has streamed the KV cache through every cache level, so
// each row's sequence state is a miss: its first line, its blocks' line and
// the end of its token list (which the first line points to). update() asks
// for a row's first two lines kRowsAhead rows before it reaches the row, and
// for the token slot kRowsAhead / 2 rows before, so the misses overlap the
// work on the rows in between. (A pass asking for every row's lines before
// any work only waited on them: 12 µs of a 45 µs gap at 256 sequences.)
void Postprocess::prefetch_row_state(size_t row) const {
  const Sequence* seq = plan_->row_seqs[row];
  __builtin_prefetch(seq, 1);
  __builtin_prefetch(&seq->blocks, 1);
}

void Postprocess::prefetch_token_slot(size_t row) const {
  const Sequence* seq = plan_->row_seqs[row];
  __builtin_prefetch(seq->tokens.data() + seq->tokens.size(), 1);
}

}  // namespace zl
