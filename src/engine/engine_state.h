// The engine's request table and the KV memory its requests hold: what the
// scheduler, the executor and the postprocess stage share. EngineCore owns
// it; everything here belongs to the engine thread.
//
// A sequence moves waiting → running → finished, and its finish is decided
// here and only here (finish()): a running sequence gives its blocks back in
// reap_finished(), after any pass still writing its KV has ended
// (in_flight()), and only then is its finish record pushed, so a client that
// sees a finish knows its memory is free.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine_metrics.h"
#include "engine/kv_pool.h"
#include "engine/output_stage.h"
#include "engine/sequence.h"
#include "engine/window_slots.h"
#include "model/kv_cache.h"
#include "zerolayer/engine.h"

namespace zl {

class EngineState {
 public:
  // sliding_window: the model's, for the cache's window slots if it has any.
  EngineState(const EngineConfig& config, const KvCache& cache, int32_t max_seq_len, int32_t sliding_window,
              OutputStage& output);

  bool has_work() const { return !running.empty() || !waiting.empty(); }
  // Queues a sequence (new or preempted) in admission order.
  void insert_waiting(std::unique_ptr<Sequence> seq);
  // A sequence holds a block table (and a window table) exactly while it
  // runs; take_back_tables() wants its blocks released first.
  void lend_tables(Sequence* seq);
  void take_back_tables(Sequence* seq);
  // Compaction is about to rewrite seq's block table. If a pass in flight
  // reads it, swaps in a copy from the spares (once per pass); the old table
  // rejoins them once that pass is postprocessed.
  void renew_table(Sequence* seq);
  // A pass submitted after the last one postprocessed holds seq (overlap).
  bool in_flight(const Sequence* seq) const { return seq->plan_id > committed_plan; }
  // Signs the rest of a sequence's completed blocks before it gives them up:
  // signed blocks stay cached for later prompts.
  void sign_all(Sequence* seq) { pool.commit(seq->blocks, seq->tokens, seq->blocks.num_computed_tokens); }
  bool window_admits(const Sequence* seq) const { return !window || window->can_admit(seq->max_total_tokens); }
  // Window slots for the chunk a pass computes (a no-op without them).
  [[gnu::always_inline]] void prepare_window(Sequence* seq, int32_t start, int32_t num_tokens) {
    if (window) window->prepare(seq->blocks, seq->window, start, num_tokens);
  }
  void release_window(Sequence* seq) {
    if (window) window->release(seq->blocks, seq->window);
  }
  // Ends a request with its terminal event. A waiting one's record is pushed
  // now (the caller removes it from `waiting`); a running one keeps its
  // blocks and its place in `running` until reap_finished().
  void finish(Sequence* seq, FinishReason reason, const char* detail, Clock::time_point now);
  // Finished sequences leave `running`: their blocks go back to the pool all
  // at once, then their finish records are pushed.
  void reap_finished();
  // For tests: the live sequences' block sets (for KvPool::check_invariants).
  std::vector<const SeqBlocks*> live_blocks() const;

  const EngineConfig config;
  KvPool pool;
  std::unique_ptr<WindowSlots> window;   // when the cache has window slots
  // Waiting sequences, sorted so back() is next: highest priority, then earliest.
  std::vector<std::unique_ptr<Sequence>> waiting;
  // Running sequences in admission order (preemption takes the last).
  std::vector<std::unique_ptr<Sequence>> running;
  uint64_t next_arrival = 0;
  uint64_t admit_round = 0;              // admissions rounds so far (request traces)
  uint64_t committed_plan = 0;           // the last pass postprocessed
  // The next plan's buffer holds the decode rows of every running sequence
  // that decodes, advanced by postprocess (kept rows): the scheduler only adds
  // prefill chunks. Cleared by preemption, compaction, any finish
  // (postprocess keeps the rows anew after the finishes it makes) and
  // whatever leaves a sequence decoding outside them (an admission or a
  // prefill chunk that stops one token short of the prompt's end), and by
  // queueing a pass on the runner: only steps with no pass running keep rows.
  bool rows_kept = false;
  // Overlap: planning waits until no pass runs (a preemption victim is in
  // the running pass).
  bool need_drain = false;
  bool have_last_forward = false;        // the last pass ended with work left (a gap follows)
  Clock::time_point last_forward_end;
  EngineMetrics metrics;
  OutputStage& output;

 private:
  // Block tables not in use, each with room for a max_seq_len sequence. A
  // sequence holds one exactly while it runs (admission to finish or
  // preemption), and a pass in flight may still read one table of each
  // sequence it holds that compaction renewed (retired_tables_), so
  // 2 x max_num_seqs of them are enough and admission, paged growth and
  // compaction never reallocate a table.
  std::vector<std::vector<int32_t>> spare_tables_;         // [2 * max_num_seqs]
  std::vector<std::vector<int32_t>> retired_tables_;       // [max_num_seqs]
  uint64_t retired_until_ = 0;           // the pass that reads retired_tables_
  std::vector<std::vector<int32_t>> spare_window_tables_;  // the same, for window slots
  std::vector<SeqBlocks*> releasing_;    // [max_num_seqs] reap_finished(): the finished sequences' blocks
  bool any_finished_ = false;            // since the last reap_finished()
};

}  // namespace zl
