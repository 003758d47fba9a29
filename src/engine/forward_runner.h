// Overlap scheduling's compute thread. The engine hands it forward passes;
// it runs them one after another, and when the next is already queued it
// starts it the moment the previous ends, first copying the previous pass's
// greedy tokens into the rows that continue from them (feeds). Meanwhile the
// engine thread commits and samples the previous pass, publishes its events
// and builds the pass after: its bookkeeping runs beside compute instead of
// between two passes (SGLang's overlap scheduler, vLLM's async scheduling).
//
// At most two passes are outstanding: one running, one queued. Until wait()
// returns a job, the runner owns its tokens, its results and the KV it
// writes; after, the engine does, except the job's greedy tokens, which the
// runner still reads to feed the job queued behind it (nothing writes them
// but the next forward pass into that buffer). The logits buffer is shared
// by all jobs: the engine reads it only with no pass running.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <thread>

#include "engine/sequence.h"
#include "model/llama.h"
#include "zerolayer/status.h"

namespace zl {

// Row `token_index` of a pass takes the previous pass's greedy token of its
// logits row `source_row`: a plain-greedy sequence's next token, not yet
// known when the pass was planned.
struct FeedRow {
  int32_t token_index;
  int32_t source_row;
};

struct ForwardJob {
  // Filled by the engine before submit().
  ForwardBatch batch;
  std::span<int32_t> tokens;            // batch.tokens, writable for the feeds
  std::span<const FeedRow> feeds;
  float* logits = nullptr;              // [logit_rows, vocab_size]
  int32_t* greedy_tokens = nullptr;     // [logit_rows] or null
  bool greedy_only = false;
  // Filled by the runner.
  Status status;
  Clock::time_point start, end;         // the forward call alone
};

class ForwardRunner {
 public:
  ForwardRunner(LlamaModel& model, KvCache& cache);
  ~ForwardRunner();  // waits for what was submitted, then joins
  ForwardRunner(const ForwardRunner&) = delete;
  ForwardRunner& operator=(const ForwardRunner&) = delete;

  // Engine thread. Queues a job behind the one running (at most one).
  void submit(ForwardJob* job);
  // Engine thread. Waits for the oldest job not yet waited for and returns it.
  ForwardJob* wait();
  // Jobs submitted and not yet returned by wait().
  int outstanding() const { return static_cast<int>(submitted_.load(std::memory_order_relaxed) - returned_); }

 private:
  void run();

  LlamaModel& model_;
  KvCache& cache_;
  ForwardJob* jobs_[2] = {};             // by job number % 2
  std::atomic<uint32_t> submitted_{0};   // futex word: jobs submitted so far
  std::atomic<uint32_t> done_{0};        // futex word: jobs finished so far
  std::atomic<uint32_t> runner_sleeping_{0};
  std::atomic<uint32_t> engine_sleeping_{0};
  std::atomic<bool> stop_{false};
  uint32_t returned_ = 0;                // engine thread: jobs wait() returned
  Clock::time_point last_end_;           // engine thread: the last returned job's
  Clock::duration last_duration_{};     // the expected length of the next pass
  Clock::duration previous_duration_{};
  std::thread thread_;
};

}  // namespace zl
