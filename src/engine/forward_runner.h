// Overlap scheduling's compute thread. The engine hands it forward passes;
// it runs them one after another, each with its sampling (the rows whose
// sequence samples draw their token from the pass's logits right after it),
// and when the next is already queued it starts it the moment the previous
// ends, first copying the previous pass's tokens into the rows that continue
// from them (feeds). Meanwhile the engine thread commits the previous pass,
// publishes its events and builds the pass after: its bookkeeping runs
// beside compute instead of between two passes (SGLang's overlap scheduler,
// vLLM's async scheduling).
//
// At most two passes are outstanding: one running, one queued. Until wait()
// returns a job, the runner owns its tokens, its results, the KV it writes
// and the samplers of its sampled rows (but for the grammar masks, below);
// after, the engine does, except the
// job's next tokens, which the runner still reads to feed the job queued
// behind it (nothing writes them but the next pass into that buffer). The
// logits buffer is shared by all jobs and read only by the sampling of the
// pass that wrote it.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <thread>

#include "engine/kv_pool.h"
#include "engine/sampler.h"
#include "engine/sequence.h"
#include "model/llama.h"
#include "zerolayer/status.h"

namespace zl {

// Row `token_index` of a pass takes the previous pass's next token of its
// logits row `source_row`: a sequence's next token, not yet known when the
// pass was planned.
struct FeedRow {
  int32_t token_index;
  int32_t source_row;
};

// A logits row whose sequence samples (not plain greedy): its token is drawn
// by its sampler right after the pass, on the thread that ran the pass.
struct SampledRow {
  int32_t row;
  Sampler* sampler;
};

// What a sampled row gives besides its token.
struct RowSample {
  float logprob = 0.0f;                 // the token's, under the raw distribution, if asked for
  int32_t num_top = 0;                  // its top logprobs: ForwardJob::top[row * kMaxTopLogprobs, + num_top)
  GrammarStep grammar = GrammarStep::kNone;  // what the token did to its structured output
};

struct ForwardJob {
  // Filled by the engine before submit().
  ForwardBatch batch;
  std::span<int32_t> tokens;            // batch.tokens, writable for the feeds
  std::span<const FeedRow> feeds;
  // KV blocks to copy (compaction), in order, before the forward call. The
  // batch may be empty: then the job only copies.
  std::span<const BlockMove> block_moves;
  float* logits = nullptr;              // [logit_rows, vocab_size]
  // [logit_rows] each row's next token: the argmax, replaced by the draw for sampled rows.
  int32_t* next_tokens = nullptr;
  // None: the logits are not read (a device model need not copy them back).
  std::span<const SampledRow> sampled;
  RowSample* samples = nullptr;         // [logit_rows], set for sampled rows
  // Structured output under overlap: the sampled rows' grammar masks depend
  // on the pass before's tokens, so the engine thread fills them while this
  // pass's forward call runs (Executor::fill_masks), then stores 1 in
  // masks_ready (release); the sampling waits for it. Otherwise the sampler
  // fills its mask itself.
  bool masks_by_engine = false;
  uint32_t masks_ready = 0;             // through std::atomic_ref
  TokenLogprob* top = nullptr;          // [logit_rows, kMaxTopLogprobs]
  // Filled by whoever runs it (run_forward_job()).
  Status status;
  Clock::time_point start, end;         // the block copies, the forward pass and its sampling
  int64_t copy_ns = 0;                  // the block copies
};

// Runs one job on the calling thread: the forward pass, then its sampled
// rows' draws (spread over the model's pool when there are several).
void run_forward_job(LlamaModel& model, KvCache& cache, ForwardJob& job);

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
  // Engine thread, with one job outstanding: sleeps until `deadline` or until
  // that job ends, whichever comes first. Returns whether it has ended.
  bool sleep_until(Clock::time_point deadline);
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
