// The engine loop's body, without the thread: the request table, the KV
// pool and one step = admit → schedule → forward → update. The Engine runs it
// on its own thread; tests drive step() directly, deterministically.
//
// Ownership: everything here belongs to the one thread that calls it, but
// for a pass the ForwardRunner runs (overlap scheduling): its StepPlan's
// tokens and results, logits_, the KV it writes and its sampled rows'
// samplers are the runner's until runner_->wait() returns it.
// After warm-up a step allocates nothing: batch buffers are sized once for
// max_num_batched_tokens and max_num_seqs, block tables come from a free list
// of max_num_seqs tables sized for the longest sequence, and compaction's
// scratch is sized for the pool (tests/engine/engine_step_alloc_test.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine_metrics.h"
#include "engine/forward_runner.h"
#include "engine/kv_pool.h"
#include "engine/output_stage.h"
#include "engine/sequence.h"
#include "engine/window_slots.h"
#include "model/kv_cache.h"
#include "model/llama.h"
#include "zerolayer/engine.h"

namespace zl {

class EngineCore {
 public:
  // eos_ids end generation unless a request sets ignore_eos. Events go
  // through `output` (which must outlive the core and call stop_by_string()
  // for the stop strings it finds); without one, a stage of the core's own
  // delivers them on this thread at the end of each step.
  EngineCore(const EngineConfig& config, LlamaModel& model, KvCache& cache, std::vector<int32_t> eos_ids,
             OutputStage* output = nullptr);

  // Records the ring between the core and its output stage needs.
  static int32_t output_capacity(const EngineConfig& config) {
    return 4 * (config.max_num_seqs + config.max_num_waiting);
  }

  // Queues a validated sequence (from submit) for admission.
  void enqueue(std::unique_ptr<Sequence> seq);
  // Finishes the request with kAborted if it is still waiting or running.
  void abort(RequestId id);
  // Finishes the request with kStop: the output stage found a stop string.
  void stop_by_string(RequestId id);
  // Finishes everything in flight with kAborted (shutdown).
  void abort_all();

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  // One iteration: admit, schedule, one forward pass, sample, publish. With
  // overlap (see step_overlapped()) the pass may still run when it returns.
  void step();

  EngineStats stats() const;
  const KvPool& pool() const { return pool_; }
  const EngineMetrics& metrics() const { return metrics_; }
  // The request log writes a stats region's ring of requests (StatsPublisher).
  RequestLog& request_log() { return metrics_.request_log; }
  // When the last forward pass ended.
  Clock::time_point last_forward_end() const { return last_forward_end_; }
  // For tests: the live sequences' block sets (for KvPool::check_invariants).
  std::vector<const SeqBlocks*> live_blocks() const;

 private:
  struct Scheduled {
    Sequence* seq;
    int32_t num_tokens;
  };

  // One forward pass: built by schedule(), read by update() after the pass.
  // With overlap two alternate: one runs while the engine updates the one
  // before it and builds the one after. Capacities are fixed at construction.
  struct StepPlan {
    std::vector<int32_t> tokens;         // [max_num_batched_tokens]
    std::vector<SeqChunk> chunks;        // [max_num_seqs]
    std::vector<int32_t> rows;           // [max_num_seqs] rows whose logits are sampled
    std::vector<Sequence*> row_seqs;     // [max_num_seqs] the sequence of each row
    std::vector<Scheduled> scheduled;    // [max_num_seqs]
    std::vector<int32_t> next_tokens;    // [max_num_seqs] each logits row's next token
    std::vector<SampledRow> sampled;     // [max_num_seqs] rows whose sequence samples
    std::vector<RowSample> samples;      // [max_num_seqs] their logprobs...
    std::vector<TokenLogprob> top;       // [max_num_seqs, kMaxTopLogprobs] ...and top logprobs
    std::vector<FeedRow> feeds;          // [max_num_seqs] tokens the runner copies in
    // Rows [0, num_decode_rows) are decodes: scheduled[row] is row_seqs[row]'s
    // one token; prefill chunks follow them.
    size_t num_decode_rows = 0;
    bool reused = false;                 // the decode rows are kept ones
    bool all_decoders_scheduled = true;  // schedule() left no decoding sequence out
    uint64_t id = 0;                     // overlap: this pass's number (stamp_plan())
    ForwardJob job;                      // overlap: what the runner reads and fills
  };

  // The four marked always_inline run for every row of every step, all from
  // update()'s row loop: as calls (GCC's size limits kept sample_next and
  // keep_row out of line) each cost a prologue and epilogue, and the row's
  // fields were loaded again after each.
  // may_compact false: a pass runs, so no KV block may move (compaction
  // waits for a drained step instead).
  void admit_waiting(bool may_compact);
  bool compact_for(int32_t max_total_tokens);
  void schedule();
  bool reserve(Sequence* seq, int32_t num_tokens);
  void queue_signing(Sequence* seq);
  [[gnu::always_inline]] inline void queue_signing_if_due(Sequence* seq);
  void sign_queued();
  void sign_all(Sequence* seq);
  // feed_row >= 0: the one token is the in-flight pass's next token of
  // that row (overlap), else tokens from `start`.
  void add_to_batch(Sequence* seq, int32_t start, int32_t num_tokens, int32_t feed_row = -1);
  void step_overlapped();
  void submit_plan();
  void finish_pass(const ForwardJob& job);
  bool in_flight(const Sequence* seq) const { return seq->plan_id > committed_plan_; }
  bool pass_running() const { return runner_ && runner_->outstanding() > 0; }
  void add_prefill_chunks(int32_t budget);
  [[gnu::always_inline]] inline bool keep_row(size_t row, size_t* next_rows);
  bool may_preempt_last() const;
  void preempt_last();
  void update(Clock::time_point now);
  void commit_computed(const Scheduled& s, Clock::time_point now);
  [[gnu::always_inline]] inline void commit_decode(const Scheduled& s, Clock::time_point now);
  // record_inter_token: false when update() records the step's inter-token
  // times at once.
  [[gnu::always_inline]] inline void sample_next(size_t row, Clock::time_point now, bool record_inter_token);
  void prepare_job(StepPlan& plan);
  void finish(Sequence* seq, FinishReason reason, const char* detail, Clock::time_point now);
  void finish_by_id(RequestId id, FinishReason reason, const char* detail);
  void publish();
  void insert_waiting(std::unique_ptr<Sequence> seq);
  void lend_tables(Sequence* seq);
  void take_back_tables(Sequence* seq);
  bool window_admits(const Sequence* seq) const { return !window_ || window_->can_admit(seq->max_total_tokens); }
  // Window slots for the chunk the pass computes (a no-op without them).
  [[gnu::always_inline]] inline void prepare_window(Sequence* seq, int32_t start, int32_t num_tokens) {
    if (window_) window_->prepare(seq->blocks, seq->window, start, num_tokens);
  }
  void release_window(Sequence* seq) {
    if (window_) window_->release(seq->blocks, seq->window);
  }
  // update(): asks for the lines row `row` of the batch needs (see there).
  void prefetch_row_state(size_t row) const;
  void prefetch_token_slot(size_t row) const;
  void reap_finished();

  const EngineConfig config_;
  LlamaModel& model_;
  KvCache& cache_;
  const std::vector<int32_t> eos_ids_;
  const int32_t signs_per_step_;         // decode blocks signed per step at most (update())
  KvPool pool_;
  std::unique_ptr<WindowSlots> window_;  // when the cache has window slots
  uint64_t next_arrival_ = 0;
  uint64_t admit_round_ = 0;             // admit_waiting() calls so far

  // Waiting sequences, sorted so back() is next: highest priority, then earliest.
  std::vector<std::unique_ptr<Sequence>> waiting_;
  // Running sequences in admission order (preemption takes the last).
  std::vector<std::unique_ptr<Sequence>> running_;

  // The pass being built or updated, and the one in flight on the runner.
  StepPlan plans_[2];
  StepPlan* plan_ = &plans_[0];
  StepPlan* inflight_ = &plans_[1];
  std::vector<float> logits_;            // [max_num_seqs, vocab_size]
  // Overlap scheduling: when on (config, CPU, contiguous), passes run on the
  // runner's thread and chain; see step_overlapped().
  // Declared after what a pass reads, so that it is destroyed (waiting for
  // the pass) first.
  std::unique_ptr<ForwardRunner> runner_;
  uint64_t next_plan_id_ = 0;            // passes submitted to the runner
  uint64_t committed_plan_ = 0;          // the last of them updated
  bool need_drain_ = false;              // compaction waits for no pass in flight
  // The plan's decode rows are the next decode of every running sequence
  // that decodes, advanced by update() after sampling: schedule() keeps them
  // and adds only prefill chunks. Cleared by preemption, compaction, any
  // finish (update() keeps the rows anew after the finishes it makes) and
  // whatever leaves a sequence decoding outside them (an admission or a
  // prefill chunk that stops one token short of the prompt's end), and
  // submit_plan(): only steps with no pass running keep rows.
  bool rows_kept_ = false;
  std::vector<Sequence*> to_sign_;       // [signs_per_step_] decodes whose next block is signed this step
  std::vector<KvPool::PreparedSign> prepared_signs_;  // [signs_per_step_] the same, hashed
  std::vector<SeqBlocks*> live_scratch_; // [max_num_seqs] compaction: the running sequences' blocks
  std::vector<SeqBlocks*> releasing_;    // [max_num_seqs] reap_finished(): the finished sequences' blocks
  std::vector<BlockMove> moves_;         // [num_blocks] compaction: block copies to apply
  // Block tables not in use, each with room for a max_seq_len sequence. A
  // sequence holds one exactly while it runs (admission to finish or
  // preemption), so max_num_seqs of them are enough and admission and paged
  // growth never reallocate a table.
  std::vector<std::vector<int32_t>> spare_tables_;  // [max_num_seqs]
  std::vector<std::vector<int32_t>> spare_window_tables_;  // the same, for window slots

  bool have_last_forward_ = false;       // the last pass ended with work left (a gap follows)
  Clock::time_point last_forward_end_;
  EngineMetrics metrics_;

  bool any_finished_ = false;            // since the last reap_finished()
  std::vector<RequestId> pending_stops_;  // stop strings found by own_output_
  std::unique_ptr<OutputStage> own_output_;
  OutputStage* output_;                  // own_output_ or the engine's
};

}  // namespace zl
