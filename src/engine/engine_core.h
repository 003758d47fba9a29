// The engine loop's body, without the thread: the request table, the KV
// pool, and one step. The Engine runs it on its own thread; tests drive
// step() directly, deterministically.
//
// One step (step()), after the Engine loop has enqueued what arrived (with
// overlap it first sleeps until shortly before the pass in flight should end,
// wait_to_plan(), so that what arrives during a pass joins the next one):
//   1. Admit waiting sequences in priority order while a slot is free and
//      the KV pool admits them (Scheduler). A fragmented pool is compacted
//      a bounded slice a step; the slice's KV copies run before the pass.
//   2. Plan the next pass into a StepPlan: every decoding sequence's one
//      token, then prefill chunks with the budget left (Scheduler). With a
//      pass still in flight, plan as if it had ended: its rows feed ours.
//   3. Launch the pass, the forward call and its sampling (Executor): with
//      overlap it is queued on the runner thread behind the one in flight.
//   4. Take the pass that has ended (with overlap, wait for the older one,
//      while the new one runs).
//   5. Postprocess it: commit the computed tokens to the pool, end each row's
//      sequence on its token or append it, keep the decode rows, give
//      finished sequences' blocks back (Postprocess).
//   6. Publish the step's tokens and finishes to the output stage.
//
// Ownership: everything here belongs to the one thread that calls it, but
// for a pass in flight on the runner (overlap): its StepPlan's tokens and
// results, the logits, the KV it writes and its sampled rows' samplers are
// the runner's until the Executor has waited for it.
// After warm-up a step allocates nothing: batch buffers are sized once for
// max_num_batched_tokens and max_num_seqs, block tables come from a free list
// of max_num_seqs tables sized for the longest sequence, and compaction's
// scratch is sized for the pool (tests/engine/engine_step_alloc_test.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine_metrics.h"
#include "engine/engine_state.h"
#include "engine/executor.h"
#include "engine/kv_pool.h"
#include "engine/output_stage.h"
#include "engine/postprocess.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
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

  bool has_work() const { return state_.has_work(); }
  int32_t num_running() const { return static_cast<int32_t>(state_.running.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(state_.waiting.size()); }
  // One iteration (see the top of this file). With overlap the pass it
  // launched may still run when it returns.
  void step();
  // Overlap: sleeps until the next pass should be planned (see
  // Executor::wait_to_plan()); true if it slept, so that requests that
  // arrived meanwhile should be enqueued before step().
  bool wait_to_plan() { return executor_.wait_to_plan(); }

  EngineStats stats() const;
  const KvPool& pool() const { return state_.pool; }
  // Before the engine thread starts: where the pool's KV events go (kv_events.h).
  void set_kv_event_queue(KvEventQueue* queue) { state_.pool.set_event_queue(queue); }
  const EngineMetrics& metrics() const { return state_.metrics; }
  // The request log writes a stats region's ring of requests (StatsPublisher).
  RequestLog& request_log() { return state_.metrics.request_log; }
  // When the last forward pass ended.
  Clock::time_point last_forward_end() const { return state_.last_forward_end; }
  // For tests: the live sequences' block sets (for KvPool::check_invariants).
  std::vector<const SeqBlocks*> live_blocks() const { return state_.live_blocks(); }

 private:
  void finish_by_id(RequestId id, FinishReason reason, const char* detail);
  void publish();

  std::vector<RequestId> pending_stops_;  // stop strings found by own_output_
  std::unique_ptr<OutputStage> own_output_;
  EngineState state_;
  Scheduler scheduler_;
  Postprocess postprocess_;
  // Declared last: destroyed first, waiting for a pass in flight, which
  // reads the state's sequences.
  Executor executor_;
};

}  // namespace zl
