// zerolayer's engine: one thread that owns the model, the KV cache and every
// request's state, and runs the loop drain inbox → admit → schedule → one
// forward pass → sample → publish, with no scheduler beside it.
//
//   auto engine = zl::Engine::create(config);          // loads the model
//   auto id = (*engine)->submit(std::move(request));   // any thread, never blocks
//   ... request.sink receives token events, then exactly one FinishEvent ...
//   (*engine)->abort(*id);                              // any thread
//
// Contracts: submit() and abort() are safe from any thread and only push onto
// a lock-free inbox. Sinks are called by the engine's output stage (its own
// thread, or the engine thread for a small step), one call at a time and in
// order, and must not block (hand the event to your own queue or ring). Every
// accepted request gets exactly one FinishEvent, after which its KV memory is
// back in the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "zerolayer/cache.h"
#include "zerolayer/device.h"
#include "zerolayer/histogram.h"
#include "zerolayer/request.h"
#include "zerolayer/status.h"
#include "zerolayer/weight_format.h"

namespace zl {

class Tokenizer;  // tokenizer/tokenizer.h, inside the engine's libraries

// The default KV pool's bound, as a share of the machine's total memory.
inline constexpr double kDefaultKvShareOfMemory = 0.25;

struct EngineConfig {
  std::string model;                  // a model directory, a .gguf file or dummy:NAME[:SEED]
  std::string tokenizer;              // overrides the model's tokenizer
  int32_t num_threads = 0;            // 0: one per core
  Device device;                      // cpu, or cuda:N (weights and KV pool on that device)
  // On a CUDA device: each request's tokens independent of the batch (see
  // CudaModelOptions::batch_invariant). The CPU path always is.
  bool batch_invariant = false;
  int32_t max_seq_len = 0;            // 0: the model's context
  int32_t max_num_seqs = 256;         // sequences in one batch at most
  int32_t max_num_batched_tokens = 2048;  // tokens in one forward pass at most
  int32_t max_num_waiting = 4096;     // queue bound; submit fails beyond it
  // Prefill first (SGLang's way): while an admitted prompt still prefills,
  // passes compute prompts alone and decoding sequences wait, for at most
  // this many ms in a row; then one pass mixes them. A new prompt's first
  // token then waits for the prompts before it only, at the cost of the
  // decoders' inter-token time. 0: every pass mixes (vLLM's way): all
  // decodes first, then prefill chunks with the budget left.
  int32_t prefill_first_ms = 0;
  // KV pool size (CPU): kv_cache_bytes when > 0; else kv_cache_fraction of
  // the machine's total memory when > 0; else (the default) what
  // max_num_seqs sequences of the full context need, at most
  // kDefaultKvShareOfMemory of total memory. On CUDA a fraction is of the
  // device memory left after the weights (0: 0.9 of it).
  int64_t kv_cache_bytes = 0;
  double kv_cache_fraction = 0.0;
  int32_t block_size = 16;            // tokens per KV block
  // How keys and values are stored (see KvCacheDtype): auto is 16 bits. On a
  // CUDA device the KV is bf16, and only auto or bf16 are accepted.
  KvCacheDtype kv_cache_dtype = KvCacheDtype::kAuto;
  CachePolicy cache_policy = CachePolicy::kContiguous;
  // Compaction (contiguous and hybrid policies: scattered free blocks slid
  // together so a long extent fits) copies at most this many bytes of KV a
  // step, in slices that run before each pass, so it never stalls the
  // running requests (a slice may go past it by the rest of one sequence's
  // extent). 0: each compaction at once, in one step.
  int64_t compaction_bytes_per_step = 4 << 20;
  // Sliding-window layers keep KV for every position, as full layers do,
  // instead of their window only (llama.cpp's --swa-full): more memory, for
  // comparison and debugging.
  bool full_window_kv = false;
  // Commit the KV pool's memory at start instead of at each block's first
  // write (CPU): later requests neither wait for the kernel to back fresh
  // pages nor find them missing. Costs start-up time and resident memory at
  // once (bench/results/first_requests/README.md).
  bool kv_populate = false;
  // Overlap scheduling (CPU, every cache policy): while one forward pass
  // runs, the engine publishes the one before and plans the next, which
  // starts on the previous pass's tokens (argmax or sampled, drawn right
  // after that pass) as soon as it ends. A sequence that stops meanwhile
  // computes its queued row (or prefill chunk), which is dropped.
  bool overlap_scheduling = true;
  // KV-cache events for routers (vLLM's KVEventBatch over ZMQ, as
  // vllm-router --policy kv_aware reads them): the PUB endpoint to bind
  // ("": none, e.g. tcp://*:5557), an optional replay (ROUTER) endpoint, and
  // the topic of every message.
  std::string kv_events_endpoint;
  std::string kv_events_replay_endpoint;
  std::string kv_events_topic;
  WeightFormat weight_format;         // --dtype / --quantization conversion at load
  std::function<void(int, int)> load_progress;  // (tensors done, total), while loading
};

// A consistent snapshot of the engine's counters, taken on the engine thread.
struct EngineStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  int64_t num_steps = 0;
  int64_t num_finished = 0;
  bool reload_pending = false;  // a reload() waits for the engine to empty
  int64_t num_finished_by_reason[4] = {};  // indexed by FinishReason
  int64_t num_preemptions = 0;
  // Passes queued while the one before still ran (overlap scheduling).
  int64_t num_overlapped_passes = 0;
  // Steps whose planning waited for the pass in flight to end (overlap: a
  // preemption whose victim is in that pass).
  int64_t num_drains = 0;
  // Compaction's KV copies, run before passes: all, and the most before one.
  int64_t compaction_copy_ns_total = 0, compaction_copy_ns_max = 0;
  // Prefill first: passes that ran prompts alone while other requests decoded.
  int64_t num_prompt_passes = 0;
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  KvPoolStats kv;
  // Window slots of the sliding-window layers (0 when the model has none,
  // or with full_window_kv): all, in some running sequence's window, and
  // holding a reusable prefix's KV.
  int32_t window_slots = 0, window_slots_pinned = 0, window_slots_cached = 0;
  // Scheduling gap: host time between the end of one forward pass and the
  // start of the next, while work remains (µs, over all steps so far).
  double sched_gap_p50_us = 0, sched_gap_p99_us = 0, sched_gap_max_us = 0;
  // Full distributions in ns, over all steps / finished requests so far.
  Histogram sched_gap_ns;
  Histogram batch_seqs;              // sequences per step
  Histogram batch_tokens;            // tokens per step
  Histogram time_to_first_token_ns;
  Histogram inter_token_ns;          // between consecutive tokens of a request
  Histogram e2e_ns;                  // submit to finish
  Histogram queue_ns;                // submit to admission
  Histogram prefill_ns;              // admission to prompt computed
  Histogram decode_ns;               // first token to finish
  Histogram prompt_tokens;           // per finished request
  Histogram generation_tokens;       // per finished request
  double batch_size_mean = 0, tokens_per_step_mean = 0;
};

class Engine {
 public:
  // Loads the model, sizes the KV pool and starts the engine thread.
  static StatusOr<std::unique_ptr<Engine>> create(const EngineConfig& config);
  ~Engine();  // aborts what is in flight (each gets its FinishEvent), joins
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Validates and queues; errors (bad sampling values, a prompt beyond the
  // context, a request that can never fit the pool, a full queue) come back
  // here and no event is sent. Never blocks on the engine.
  [[nodiscard]] StatusOr<RequestId> submit(Request request);
  // Re-reads the model (`model`: another path or spec; "": the one loaded)
  // and swaps it in, blocking until done. The engine first empties: what
  // runs finishes, requests submitted meanwhile wait (nothing is refused),
  // then run on the new weights. Refused, the old model serving on, when the
  // new one's tokenizer differs from the served one in any token or special
  // id, or its vocabulary or context differ (clients, the shared-memory
  // header and the chat template keep theirs), or it fails to load; and on
  // a CUDA device (not yet). Needs the memory of both models while it loads.
  // The prefix cache and the engine's counters start over. Any thread.
  [[nodiscard]] Status reload(const std::string& model = "");
  // Compiles `output`'s grammar for this model's vocabulary on the calling
  // thread (from microseconds for a cached one to milliseconds for a new
  // JSON schema) and keeps it in output.compiled, so that submit() of the
  // request carrying it does not. An invalid spec is kInvalidArgument, its
  // message led by output.field. Thread-safe.
  [[nodiscard]] Status compile_grammar(StructuredOutput& output) const;
  // Ends the request with reason kAborted if it has not finished; no-op otherwise.
  void abort(RequestId id);
  // Blocks until the engine thread has produced a fresh snapshot.
  EngineStats stats();

  // Publishes the engine's statistics into `region` (bytes long, 8-byte
  // aligned), laid out by zerolayer/stats_protocol.h, from the engine thread
  // until detach_stats_region() or the engine's end; it formats the region
  // first. The memory must stay mapped until then. Replaces any region
  // attached before.
  [[nodiscard]] Status attach_stats_region(void* region, size_t bytes);
  // If `region` is the one attached: returns once the engine thread no longer touches it.
  void detach_stats_region(const void* region);

  struct ModelInfo {
    std::string name;                 // the model spec as given
    std::string path;                 // the folder or .gguf file it was read from ("" for dummy models)
    bool is_directory = false;        // a Hugging Face folder (chat templates live there)
    std::string gguf_chat_template;   // tokenizer.chat_template from a GGUF file, if any
    int32_t vocab_size = 0;
    int32_t max_seq_len = 0;
    int32_t kv_capacity_tokens = 0;
    KvCacheDtype kv_cache_dtype = KvCacheDtype::kAuto;  // as resolved: never kAuto once loaded
    int64_t kv_bytes_per_token = 0;   // keys and values over the layers that keep KV by block
    int32_t kv_block_size = 0;        // tokens per KV block
    int64_t kv_num_blocks = 0;
    CachePolicy cache_policy = CachePolicy::kContiguous;
  };
  const ModelInfo& model_info() const;
  // The model's tokenizer: immutable, safe to use from any thread.
  const Tokenizer& tokenizer() const;

  class Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl
