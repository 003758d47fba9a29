// Engine: the public face of the engine loop. submit() validates and
// tokenizes on the caller's thread, then hands a ready Sequence to the engine
// thread through the lock-free inbox; the engine thread drains the inbox,
// steps the EngineCore while there is work, and sleeps on a futex when idle.
#include "zerolayer/engine.h"

#include <sys/prctl.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <thread>

#include "bundle/model_loader.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "engine/grammar.h"
#include "engine/inbox.h"
#include "engine/kv_events.h"
#include "engine/scheduler.h"
#include "engine/stats_publisher.h"
#include "model/llama_cuda.h"

namespace zl {
namespace {

// How long the idle engine spins before sleeping (~50 µs of pause loops).
constexpr int kIdleSpinIterations = 2000;

struct MemoryInfo {
  int64_t total = int64_t{16} << 30;  // when /proc/meminfo cannot be read
  int64_t available = int64_t{4} << 30;
};

MemoryInfo memory_info() {
  MemoryInfo m;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemTotal:") m.total = kib * 1024;
    if (key == "MemAvailable:") m.available = kib * 1024;
  }
  return m;
}

// The CPU KV pool's bytes (see EngineConfig::kv_cache_bytes); says at start
// where the figure came from, since it decides how many sequences fit.
int64_t kv_budget_bytes(const EngineConfig& config, int64_t bytes_per_token, int64_t context) {
  const MemoryInfo memory = memory_info();
  const auto gib = [](int64_t bytes) { return str_cat(std::fixed, std::setprecision(1), bytes / double(1 << 30), " GiB"); };
  int64_t budget = 0;
  if (config.kv_cache_bytes > 0) {
    budget = config.kv_cache_bytes;
    log_info("engine: KV pool of ", gib(budget), " (--kv-cache-memory)");
  } else if (config.kv_cache_fraction > 0) {
    budget = static_cast<int64_t>(config.kv_cache_fraction * memory.total);
    log_info("engine: KV pool of ", gib(budget), ", ", config.kv_cache_fraction, " of ", gib(memory.total),
             " total memory (--kv-cache-memory)");
  } else {
    const int64_t wanted = bytes_per_token * context * config.max_num_seqs;
    const int64_t cap = static_cast<int64_t>(kDefaultKvShareOfMemory * memory.total);
    budget = std::min(wanted, cap);
    log_info("engine: KV pool of ", gib(budget), ": ", config.max_num_seqs, " sequences x ", context, " tokens x ",
             bytes_per_token, " bytes need ", gib(wanted), wanted > cap ? ", capped at " : ", under the cap of ",
             kDefaultKvShareOfMemory, " of ", gib(memory.total), " total memory (--kv-cache-memory sets it)");
  }
  if (budget > memory.available)
    log_warn("engine: the KV pool (", gib(budget), ") exceeds the memory available now (", gib(memory.available),
             "); requests may fail to get pages later");
  return budget;
}

// Identifies the weights for cache salts: the config, and each tensor's
// name, shape and first bytes (or the dummy spec, whose weights follow from it).
uint64_t model_fingerprint(const ModelSource& source) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  const ModelConfig& c = source.config;
  const int64_t fields[] = {c.vocab_size, c.dim, c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.hidden_dim};
  XXH3_64bits_update(state, fields, sizeof(fields));
  if (source.format == ModelFormat::kDummy) XXH3_64bits_update(state, source.spec.data(), source.spec.size());
  for (const auto& [name, info] : source.tensors) {
    XXH3_64bits_update(state, name.data(), name.size());
    XXH3_64bits_update(state, info.shape.data(), info.shape.size() * sizeof(int64_t));
    XXH3_64bits_update(state, info.data, std::min<uint64_t>(info.num_bytes, 64));
  }
  uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hash;
}

Status validate_config(const EngineConfig& c) {
  if (c.max_num_seqs < 1 || c.max_num_seqs > 65536) return invalid_argument("max_num_seqs must be in [1, 65536], got ", c.max_num_seqs);
  if (c.max_num_batched_tokens < 1) return invalid_argument("max_num_batched_tokens must be >= 1, got ", c.max_num_batched_tokens);
  if (c.prefill_first_ms < 0) return invalid_argument("prefill_first_ms must be >= 0, got ", c.prefill_first_ms);
  if (c.max_num_waiting < 1) return invalid_argument("max_num_waiting must be >= 1, got ", c.max_num_waiting);
  if (c.compaction_bytes_per_step < 0)
    return invalid_argument("compaction_bytes_per_step must be >= 0, got ", c.compaction_bytes_per_step);
  if (c.block_size < 1 || c.block_size > 1024) return invalid_argument("block_size must be in [1, 1024], got ", c.block_size);
  if (c.kv_cache_bytes < 0) return invalid_argument("kv_cache_memory must be positive, got ", c.kv_cache_bytes);
  if (!(c.kv_cache_fraction >= 0.0 && c.kv_cache_fraction <= 1.0))
    return invalid_argument("the KV cache fraction must be in (0, 1] (0: the default size), got ", c.kv_cache_fraction);
  if (c.max_seq_len < 0) return invalid_argument("max_seq_len must be >= 0, got ", c.max_seq_len);
  return ok_status();
}

// How the CPU KV memory is split: blocks for the full-attention layers and,
// when the model has sliding-window layers shorter than its context, window
// slots for those (engine/window_slots.h).
struct KvLayout {
  int64_t num_blocks = 0;
  int64_t num_window_slots = 0;
  int64_t block_bytes = 0;   // one block over the layers that keep KV by block
  int64_t slot_bytes = 0;    // one window slot over the windowed layers
};

// The budget (capped at what max_num_seqs full-length sequences need) goes
// to blocks; with windowed layers, first to as many window slots as
// max_num_seqs sequences pin with their windows plus one step's prefill
// chunks, but at most half the budget (the whole, without full layers).
StatusOr<KvLayout> plan_kv_layout(const ModelConfig& mc, const EngineConfig& config, KvCacheDtype dtype,
                                  int64_t budget) {
  const int32_t bs = config.block_size;
  int32_t num_windowed = mc.num_window_layers();
  const bool slots = num_windowed > 0 && !config.full_window_kv && mc.sliding_window < mc.max_seq_len;
  if (!slots) num_windowed = 0;
  KvLayout kv;
  kv.block_bytes = KvCache::block_bytes(mc, bs, mc.num_layers - num_windowed, dtype);
  kv.slot_bytes = KvCache::block_bytes(mc, bs, num_windowed, dtype);
  const int64_t blocks_per_seq = (mc.max_seq_len + bs - 1) / bs;
  const int64_t max_blocks = std::min<int64_t>(blocks_per_seq * config.max_num_seqs, INT32_MAX / bs);
  if (slots) {
    const int64_t reserve = WindowSlots::full_reserve(mc.sliding_window, bs);
    const int64_t wanted = std::min(reserve * config.max_num_seqs + (config.max_num_batched_tokens + bs - 1) / bs, max_blocks);
    const int64_t share = kv.block_bytes > 0 ? budget / 2 : budget;
    kv.num_window_slots = std::min(wanted, share / kv.slot_bytes);
    if (kv.num_window_slots < reserve)
      return resource_exhausted("the KV cache budget of ", budget, " bytes holds no window of ", mc.sliding_window,
                                " tokens (", reserve, " blocks of ", kv.slot_bytes, " bytes); give more or pass full_window_kv");
    budget -= kv.num_window_slots * kv.slot_bytes;
  }
  kv.num_blocks = kv.block_bytes > 0 ? std::min(budget / kv.block_bytes, max_blocks) : max_blocks;
  if (kv.num_blocks < 1)
    return resource_exhausted("the KV cache budget of ", budget, " bytes holds no block of ", kv.block_bytes, " bytes");
  return kv;
}

// What EngineConfig::kv_cache_dtype means for this model and device: auto is
// bf16 on CUDA (whose KV is bf16), default_kv_dtype on the CPU.
StatusOr<KvCacheDtype> resolve_kv_dtype(const EngineConfig& config, const ModelWeights& weights) {
  const KvCacheDtype asked = config.kv_cache_dtype;
  if (config.device.is_cuda()) {
    if (asked != KvCacheDtype::kAuto && asked != KvCacheDtype::kBF16)
      return invalid_argument("kv_cache_dtype ", kv_cache_dtype_name(asked),
                              ": the CUDA backend keeps KV in bf16 only (use auto or bf16)");
    return KvCacheDtype::kBF16;
  }
  if (asked != KvCacheDtype::kAuto) return asked;
  return default_kv_dtype(weights);
}

// EngineConfig::kv_populate: commits the pool now, and says what it cost.
Status populate_kv(KvCache& cache, int num_threads) {
  const auto start = std::chrono::steady_clock::now();
  ZL_RETURN_IF_ERROR(cache.populate(num_threads));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log_info("engine: KV pool memory committed in ", seconds, " s");
  return ok_status();
}

// The context a model runs at: its own, or EngineConfig::max_seq_len (smaller).
Status cap_context(const EngineConfig& config, ModelConfig& mc) {
  if (config.max_seq_len <= 0) return ok_status();
  if (config.max_seq_len > mc.max_seq_len)
    return invalid_argument("max_seq_len ", config.max_seq_len, " exceeds the model's context of ", mc.max_seq_len);
  mc.max_seq_len = config.max_seq_len;
  return ok_status();
}

// The ids that end a sequence: the config's and the tokenizer's eos.
std::vector<int32_t> end_ids(const ModelConfig& mc, const Tokenizer& tokenizer) {
  std::vector<int32_t> eos = mc.eos_token_ids;
  if (tokenizer.special_ids().eos >= 0) eos.push_back(tokenizer.special_ids().eos);
  return eos;
}

// Ok if `next` tokenizes and decodes as `current` does: every token's text
// and kind, the special ids. A reloaded model must take the same ids, since
// clients, the prefix cache and the shared-memory header hold them.
Status check_same_tokenizer(const Tokenizer& current, const Tokenizer& next) {
  if (next.vocab_size() != current.vocab_size())
    return invalid_argument("the new model's tokenizer has ", next.vocab_size(), " tokens, the served one ",
                            current.vocab_size());
  const SpecialTokenIds &a = current.special_ids(), &b = next.special_ids();
  if (a.bos != b.bos || a.eos != b.eos || a.unk != b.unk || a.pad != b.pad || a.add_bos != b.add_bos ||
      a.add_eos != b.add_eos || current.token_spelling() != next.token_spelling())
    return invalid_argument("the new model's tokenizer differs from the served one in its special tokens");
  for (int32_t id = 0; id < current.vocab_size(); ++id)
    if (current.token_text(id) != next.token_text(id) || current.is_special(id) != next.is_special(id))
      return invalid_argument("the new model's tokenizer differs from the served one at token ", id, " ('",
                              next.token_text(id), "' for '", current.token_text(id), "')");
  return ok_status();
}

}  // namespace

class Engine::Impl {
 public:
  explicit Impl(const EngineConfig& config) : config(config) {}
  ~Impl() {
    // A message, not just a flag, so a sleeping or about-to-sleep engine wakes.
    auto message = new InboxMessage();
    message->kind = InboxMessage::Kind::kStop;
    inbox.push(message);
    if (thread.joinable()) thread.join();
    output.reset();  // delivers the last events while the tokenizer lives
  }

  Status load();
  struct Forward;
  StatusOr<int64_t> attach_cuda(const ModelConfig& mc, Forward& f);
  StatusOr<RequestId> submit(Request request);
  void run();
  void drain();
  // Runs `call` on the engine thread between steps; returns when it has run.
  void call_on_engine_thread(const std::function<void()>& call);
  // Pushes a message the engine thread answers by setting stats_done; waits for it.
  void push_and_wait(InboxMessage* message);
  zl_stats_config stats_config() const;

  // What reload() replaces: the weights, the model over them, the KV pool.
  struct Forward {
    std::unique_ptr<ModelWeights> weights;  // on the heap: the model keeps a reference
    std::unique_ptr<LlamaModel> model;
    std::unique_ptr<KvCache> cache;
    KvLayout kv;
    KvCacheDtype kv_dtype = KvCacheDtype::kAuto;
  };
  StatusOr<Forward> build_forward(const ModelSource& from, const ModelConfig& mc);
  Status reload_model(const std::string& spec);
  void finish_reload();

  EngineConfig config;
  // The first load's: its tokenizer and config serve every later model too
  // (reload() refuses any other), read by submit() on any thread.
  ModelSource source;
  std::unique_ptr<ModelSource> reloaded_source;  // the weights' source after a reload (keeps its file mapped)
  std::unique_ptr<ContinuationPieces> pieces;  // the tokenizer's, for streaming text
  std::unique_ptr<GrammarCompiler> grammars;   // structured output
  std::unique_ptr<ThreadPool> pool;
  Forward forward;
  std::unique_ptr<OutputStage> output;  // events to sinks, on its own thread
  std::unique_ptr<KvEventPublisher> kv_events;  // outlives core, whose pool writes its queue
  std::unique_ptr<EngineCore> core;
  std::unique_ptr<StatsPublisher> publisher;  // engine thread; set while a stats region is attached
  std::atomic<uint64_t> fingerprint{0};
  ModelInfo info;

  // A reload asked for (engine thread): submits wait in `deferred` until it ran.
  struct PendingReload {
    std::string spec;
    Status* result;
    std::atomic<uint32_t>* done;
  };
  std::optional<PendingReload> reload;
  std::vector<std::unique_ptr<Sequence>> deferred;
  std::vector<RequestId> deferred_aborts;

  Inbox inbox;
  std::thread thread;
  bool stop = false;                        // engine thread only
  std::atomic<RequestId> next_id{1};
  std::atomic<int32_t> pending_submits{0};  // pushed, not yet drained
  std::atomic<int32_t> num_waiting{0};      // the engine's count, mirrored after each step
};

Status Engine::Impl::load() {
  ZL_RETURN_IF_ERROR(validate_config(config));
  LoadOptions options;
  options.tokenizer_path = config.tokenizer;
  options.weight_format = config.weight_format;
  ZL_ASSIGN_OR_RETURN(source, open_model(config.model, options));
  if (!source.tokenizer) return source.tokenizer_status.with_prefix("no tokenizer for " + config.model);
  pieces = std::make_unique<ContinuationPieces>(*source.tokenizer);
  ModelConfig& mc = source.config;
  ZL_RETURN_IF_ERROR(cap_context(config, mc));
  pool = std::make_unique<ThreadPool>(config.num_threads > 0 ? config.num_threads : default_num_threads());
  ZL_ASSIGN_OR_RETURN(forward, build_forward(source, mc));
  const KvLayout& kv = forward.kv;
  const KvCacheDtype kv_dtype = forward.kv_dtype;
  const int64_t num_blocks = kv.num_blocks;
  std::vector<int32_t> eos = end_ids(mc, *source.tokenizer);
  output = std::make_unique<OutputStage>(
      [this](RequestId id) {
        auto message = new InboxMessage();
        message->kind = InboxMessage::Kind::kStopString;
        message->id = id;
        inbox.push(message);
      },
      EngineCore::output_capacity(config));
  output->start_thread();
  grammars = std::make_unique<GrammarCompiler>(*source.tokenizer, mc.vocab_size, eos);
  core = std::make_unique<EngineCore>(config, *forward.model, *forward.cache, std::move(eos), output.get());
  if (!config.kv_events_endpoint.empty()) {
    KvEventsConfig events{config.kv_events_endpoint, config.kv_events_replay_endpoint, config.kv_events_topic,
                          config.block_size};
    ZL_ASSIGN_OR_RETURN(kv_events, KvEventPublisher::start(events));
    core->set_kv_event_queue(&kv_events->queue());
    log_info("engine: KV-cache events on ", config.kv_events_endpoint,
             config.kv_events_replay_endpoint.empty() ? "" : ", replay on " + config.kv_events_replay_endpoint);
  }
  fingerprint.store(model_fingerprint(source), std::memory_order_relaxed);
  info.name = config.model;
  info.path = source.path;
  info.is_directory = source.format == ModelFormat::kHuggingFace;
  info.gguf_chat_template = source.chat_template;
  info.vocab_size = mc.vocab_size;
  info.max_seq_len = mc.max_seq_len;
  info.kv_capacity_tokens = static_cast<int32_t>(num_blocks * config.block_size);
  info.kv_cache_dtype = kv_dtype;
  info.kv_bytes_per_token = kv.block_bytes / config.block_size;
  info.kv_block_size = config.block_size;
  info.kv_num_blocks = num_blocks;
  info.cache_policy = config.cache_policy;
  log_info("engine: ", cache_policy_name(config.cache_policy), " KV pool of ", num_blocks, " blocks x ",
           config.block_size, " tokens (", num_blocks * kv.block_bytes / (1 << 20), " MiB, ",
           kv_cache_dtype_name(kv_dtype), ", ", info.kv_bytes_per_token, " bytes a token), ", config.max_num_seqs,
           " sequences, ", config.max_num_batched_tokens, " tokens per step");
  if (config.cache_policy != CachePolicy::kPaged) {
    const int64_t block = forward.cache->bytes_per_block();
    const int32_t slice =
        compaction_blocks_per_step(config.compaction_bytes_per_step, block, forward.cache->num_blocks());
    if (slice == 0)
      log_info("engine: compaction copies at once, in one step (compaction_bytes_per_step 0)");
    else
      log_info("engine: compaction copies at most ", slice, slice == 1 ? " block (" : " blocks (", slice * block / 1024,
               " KiB) a step, beside the running pass");
  }
  if (kv.num_window_slots > 0)
    log_info("engine: sliding-window layers keep ", mc.sliding_window, " positions in ", kv.num_window_slots,
             " window slots (", kv.num_window_slots * kv.slot_bytes / (1 << 20), " MiB, ",
             kv.slot_bytes / config.block_size, " bytes a token within the window)");
  return ok_status();
}

// The weights of `from`, the model over them and an empty KV pool sized for
// them (on config.device).
StatusOr<Engine::Impl::Forward> Engine::Impl::build_forward(const ModelSource& from, const ModelConfig& mc) {
  Forward f;
  ZL_ASSIGN_OR_RETURN(ModelWeights weights, load_model_weights(from, config.load_progress));
  f.weights = std::make_unique<ModelWeights>(std::move(weights));
  f.model = std::make_unique<LlamaModel>(mc, *f.weights, *pool, config.max_num_batched_tokens);
  ZL_ASSIGN_OR_RETURN(f.kv_dtype, resolve_kv_dtype(config, *f.weights));
  if (config.device.is_cuda()) {
    ZL_ASSIGN_OR_RETURN(f.kv.num_blocks, attach_cuda(mc, f));
    f.kv.block_bytes = KvCache::block_bytes(mc, config.block_size, mc.num_layers, f.kv_dtype);
    return f;
  }
  const int64_t bytes_per_token = KvCache::block_bytes(mc, config.block_size, mc.num_layers, f.kv_dtype) / config.block_size;
  const int64_t budget = kv_budget_bytes(config, bytes_per_token, mc.max_seq_len);
  ZL_ASSIGN_OR_RETURN(f.kv, plan_kv_layout(mc, config, f.kv_dtype, budget));
  ZL_ASSIGN_OR_RETURN(f.cache, KvCache::create(mc, static_cast<int32_t>(f.kv.num_blocks), config.block_size,
                                               static_cast<int32_t>(f.kv.num_window_slots), f.kv_dtype));
  if (config.kv_populate) ZL_RETURN_IF_ERROR(populate_kv(*f.cache, pool->num_threads()));
  return f;
}

// Moves the forward pass to config.device: weights uploaded, KV pool on the
// device (sized there), the host cache only naming blocks. Returns the blocks.
StatusOr<int64_t> Engine::Impl::attach_cuda(const ModelConfig& mc, Forward& f) {
  CudaModelOptions options;
  options.device_index = config.device.index;
  options.max_batch_tokens = config.max_num_batched_tokens;
  options.max_num_seqs = config.max_num_seqs;
  options.block_size = config.block_size;
  options.kv_cache_bytes = config.kv_cache_bytes;
  options.kv_cache_fraction = config.kv_cache_fraction > 0 ? config.kv_cache_fraction : 0.9;
  options.batch_invariant = config.batch_invariant;
  ZL_ASSIGN_OR_RETURN(std::unique_ptr<CudaLlamaModel> cuda_model, CudaLlamaModel::create(mc, *f.weights, options));
  log_info("engine: ", cuda_model->description());
  CudaLlamaModel* device_model = cuda_model.get();
  f.cache = KvCache::create_external(mc, cuda_model->num_kv_blocks(), config.block_size,
                                   [device_model](int32_t src, int32_t dst) { device_model->copy_block(src, dst); });
  const int64_t num_blocks = cuda_model->num_kv_blocks();
  f.model->use_cuda(std::move(cuda_model));
  return num_blocks;
}

StatusOr<RequestId> Engine::Impl::submit(Request request) {
  if (!request.sink) return invalid_argument("request: an event sink is required");
  const ModelConfig& mc = source.config;
  std::vector<int32_t> prompt = std::move(request.prompt_ids);
  if (prompt.empty() && !request.prompt_text.empty()) prompt = source.tokenizer->encode(request.prompt_text);
  if (prompt.empty()) return invalid_argument("prompt: the prompt is empty");
  ZL_RETURN_IF_ERROR(check_token_ids("prompt", prompt, mc.vocab_size));
  ZL_RETURN_IF_ERROR(validate_sampling(request.sampling, mc.vocab_size));
  ZL_RETURN_IF_ERROR(check_token_ids("stop_token_ids", request.stop_token_ids, mc.vocab_size));
  for (const std::string& stop : request.stop) ZL_RETURN_IF_ERROR(check_text_bytes("stop", stop, kMaxStopBytes));
  ZL_RETURN_IF_ERROR(check_text_bytes("cache_salt", request.cache_salt, kMaxCacheSaltBytes));
  ZL_RETURN_IF_ERROR(check_field(field::kMaxTokens, request.max_new_tokens, 0, FieldName::kRecord));
  ZL_RETURN_IF_ERROR(check_field(field::kMinTokenProb, request.min_token_prob));
  const int64_t num_prompt = static_cast<int64_t>(prompt.size());
  if (num_prompt >= mc.max_seq_len)
    return out_of_range("prompt: ", num_prompt, " tokens do not fit the context of ", mc.max_seq_len,
                        " tokens (max_seq_len), which must also hold at least one new token");
  const int32_t max_total = static_cast<int32_t>(std::min<int64_t>(num_prompt + request.max_new_tokens, mc.max_seq_len));
  if (max_total > info.kv_capacity_tokens)
    return resource_exhausted("the request needs ", max_total, " tokens of KV memory (prompt ", num_prompt,
                              " + max_new_tokens, capped at max_seq_len ", mc.max_seq_len, ") but the KV pool holds ",
                              info.kv_capacity_tokens, " tokens");
  if (pending_submits.load(std::memory_order_relaxed) + num_waiting.load(std::memory_order_relaxed) >= config.max_num_waiting)
    return resource_exhausted("the waiting queue is full (", config.max_num_waiting, " requests); retry later");

  std::unique_ptr<GrammarMatcher> grammar;
  if (request.structured_output.kind != StructuredOutput::Kind::kNone) {
    StructuredOutput& output = request.structured_output;
    if (!output.compiled) {
      ZL_ASSIGN_OR_RETURN(output.compiled, grammars->compile(output));
    }
    grammar = std::make_unique<GrammarMatcher>(output.compiled, request.stop_token_ids, output.after_ids);
  }

  RequestId id = next_id.fetch_add(1, std::memory_order_relaxed);
  BlockSignature salt = make_cache_salt(fingerprint.load(std::memory_order_relaxed), request.cache_salt);
  auto message = new InboxMessage();
  message->kind = InboxMessage::Kind::kSubmit;
  message->sequence = std::make_unique<Sequence>(id, std::move(request), std::move(prompt), max_total, mc.vocab_size,
                                                 *source.tokenizer, salt, pieces.get());
  if (grammar) message->sequence->sampler.set_grammar(std::move(grammar));
  message->sequence->submitted_at = Clock::now();
  pending_submits.fetch_add(1, std::memory_order_relaxed);
  inbox.push(message);
  return id;
}

void Engine::Impl::drain() {
  while (InboxMessage* m = inbox.pop()) {
    switch (m->kind) {
      case InboxMessage::Kind::kSubmit:
        // During a reload's wait, new requests hold back so the engine empties.
        if (reload) deferred.push_back(std::move(m->sequence));
        else core->enqueue(std::move(m->sequence));
        pending_submits.fetch_sub(1, std::memory_order_relaxed);
        break;
      case InboxMessage::Kind::kAbort:
        if (reload) deferred_aborts.push_back(m->id);  // aborted once enqueued, whichever core it meets
        else core->abort(m->id);
        break;
      case InboxMessage::Kind::kStopString:
        core->stop_by_string(m->id);
        break;
      case InboxMessage::Kind::kStats:
        *m->stats_out = core->stats();
        m->stats_out->reload_pending = reload.has_value();
        m->stats_done->store(1, std::memory_order_release);
        futex_wake_all(m->stats_done);
        break;
      case InboxMessage::Kind::kCall:
        (*m->call)();
        m->stats_done->store(1, std::memory_order_release);
        futex_wake_all(m->stats_done);
        break;
      case InboxMessage::Kind::kReload:
        if (reload) {
          *m->reload_result = invalid_argument("a reload is in progress already");
          m->stats_done->store(1, std::memory_order_release);
          futex_wake_all(m->stats_done);
        } else {
          reload = PendingReload{*m->reload_spec, m->reload_result, m->stats_done};
        }
        break;
      case InboxMessage::Kind::kStop:
        stop = true;
        break;
      case InboxMessage::Kind::kStub:
        break;
    }
    delete m;
  }
}

void Engine::Impl::run() {
  // Overlap scheduling's timed waits (ForwardRunner::wait()) should end
  // when asked, not up to the default 50 µs later.
  prctl(PR_SET_TIMERSLACK, 1000UL);
  while (true) {
    drain();
    if (stop) break;
    if (reload && !core->has_work()) finish_reload();
    if (core->has_work()) {
      if (core->wait_to_plan()) drain();  // what arrived during the pass joins the next
      core->step();
      num_waiting.store(core->num_waiting(), std::memory_order_relaxed);
      if (publisher) publisher->after_step(*core);
    } else {
      if (publisher) publisher->before_idle(*core);
      inbox.wait(kIdleSpinIterations);
    }
  }
  // Shutdown: everything accepted gets its terminal event.
  if (reload) finish_reload();  // (refused: the engine is stopping)
  core->abort_all();
}

// Engine thread, with nothing running or waiting: the reload, then the
// requests that waited for it.
void Engine::Impl::finish_reload() {
  const auto start = std::chrono::steady_clock::now();
  Status status = stop ? unavailable("the engine is stopping") : reload_model(reload->spec);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status.ok()) log_info("engine: reloaded ", reload->spec, " in ", seconds, " s");
  else log_warn("engine: reload of ", reload->spec, " refused, serving on as before: ", status.message());
  *reload->result = std::move(status);
  reload->done->store(1, std::memory_order_release);
  futex_wake_all(reload->done);
  reload.reset();
  for (std::unique_ptr<Sequence>& sequence : deferred) core->enqueue(std::move(sequence));
  deferred.clear();
  for (RequestId id : deferred_aborts) core->abort(id);
  deferred_aborts.clear();
}

// Engine thread, idle: loads `spec` beside the served model, and swaps it in
// only once it is whole and takes the same token ids at the same context.
// The prefix cache starts empty (routers hear AllBlocksCleared); the
// tokenizer, the chat template and the served name stay.
Status Engine::Impl::reload_model(const std::string& spec) {
  if (config.device.is_cuda()) return invalid_argument("reload: not supported on a CUDA device yet");
  LoadOptions options;
  options.tokenizer_path = config.tokenizer;
  options.weight_format = config.weight_format;
  ZL_ASSIGN_OR_RETURN(ModelSource opened, open_model(spec, options));
  auto next = std::make_unique<ModelSource>(std::move(opened));
  if (!next->tokenizer) return next->tokenizer_status.with_prefix("no tokenizer for " + spec);
  ZL_RETURN_IF_ERROR(check_same_tokenizer(*source.tokenizer, *next->tokenizer));
  ModelConfig& mc = next->config;
  ZL_RETURN_IF_ERROR(cap_context(config, mc));
  if (mc.vocab_size != source.config.vocab_size || mc.max_seq_len != source.config.max_seq_len)
    return invalid_argument("the new model has ", mc.vocab_size, " ids and a context of ", mc.max_seq_len,
                            "; the served one ", source.config.vocab_size, " and ", source.config.max_seq_len);
  ZL_ASSIGN_OR_RETURN(Forward parts, build_forward(*next, mc));
  auto next_core = std::make_unique<EngineCore>(config, *parts.model, *parts.cache, end_ids(mc, *source.tokenizer),
                                                output.get());
  if (publisher) publisher->detach(*core);
  core = std::move(next_core);  // the old core, then the old model and pool, go
  forward = std::move(parts);
  reloaded_source = std::move(next);
  if (kv_events) {
    core->set_kv_event_queue(&kv_events->queue());
    kv_events->queue().cleared();
  }
  if (publisher) publisher->attach(*core);
  fingerprint.store(model_fingerprint(*reloaded_source), std::memory_order_relaxed);
  return ok_status();
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
  auto impl = std::make_unique<Impl>(config);
  ZL_RETURN_IF_ERROR(impl->load());
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

StatusOr<RequestId> Engine::submit(Request request) { return impl_->submit(std::move(request)); }

Status Engine::reload(const std::string& model) {
  const std::string spec = model.empty() ? impl_->config.model : model;
  Status result;
  auto message = new InboxMessage();
  message->kind = InboxMessage::Kind::kReload;
  message->reload_spec = &spec;
  message->reload_result = &result;
  impl_->push_and_wait(message);
  return result;
}

Status Engine::compile_grammar(StructuredOutput& output) const {
  ZL_ASSIGN_OR_RETURN(output.compiled, impl_->grammars->compile(output));
  return ok_status();
}

void Engine::abort(RequestId id) {
  auto message = new InboxMessage();
  message->kind = InboxMessage::Kind::kAbort;
  message->id = id;
  impl_->inbox.push(message);
}

EngineStats Engine::stats() {
  EngineStats out;
  auto message = new InboxMessage();
  message->kind = InboxMessage::Kind::kStats;
  message->stats_out = &out;
  impl_->push_and_wait(message);
  return out;
}

void Engine::Impl::call_on_engine_thread(const std::function<void()>& call) {
  auto message = new InboxMessage();
  message->kind = InboxMessage::Kind::kCall;
  message->call = &call;
  push_and_wait(message);
}

void Engine::Impl::push_and_wait(InboxMessage* message) {
  std::atomic<uint32_t> done{0};
  message->stats_done = &done;
  inbox.push(message);
  while (done.load(std::memory_order_acquire) == 0) futex_wait(&done, 0);
}

zl_stats_config Engine::Impl::stats_config() const {
  zl_stats_config c{};
  auto copy = [](char* out, size_t capacity, const std::string& text) {
    std::snprintf(out, capacity, "%s", text.c_str());
  };
  copy(c.model, sizeof(c.model), info.name);
  copy(c.cache_policy, sizeof(c.cache_policy), cache_policy_name(config.cache_policy));
  copy(c.weight_format, sizeof(c.weight_format), weight_format_name(config.weight_format));
  copy(c.device, sizeof(c.device), device_name(config.device));
  c.vocab_size = info.vocab_size;
  c.max_seq_len = info.max_seq_len;
  c.max_num_seqs = config.max_num_seqs;
  c.max_num_batched_tokens = config.max_num_batched_tokens;
  c.max_num_waiting = config.max_num_waiting;
  c.block_size = config.block_size;
  c.num_kv_blocks = forward.cache->num_blocks();
  c.kv_capacity_tokens = info.kv_capacity_tokens;
  c.num_threads = pool->num_threads();
  return c;
}

Status Engine::attach_stats_region(void* region, size_t bytes) {
  ZL_ASSIGN_OR_RETURN(std::unique_ptr<StatsPublisher> publisher,
                      StatsPublisher::create(region, bytes, impl_->stats_config()));
  Impl& impl = *impl_;
  impl.call_on_engine_thread([&] {
    if (impl.publisher) impl.publisher->detach(*impl.core);
    impl.publisher = std::move(publisher);
    impl.publisher->attach(*impl.core);
  });
  return ok_status();
}

void Engine::detach_stats_region(const void* region) {
  Impl& impl = *impl_;
  impl.call_on_engine_thread([&] {
    if (!impl.publisher || impl.publisher->region() != region) return;
    impl.publisher->detach(*impl.core);
    impl.publisher.reset();
  });
}

const Engine::ModelInfo& Engine::model_info() const { return impl_->info; }

const Tokenizer& Engine::tokenizer() const { return *impl_->source.tokenizer; }

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAborted: return "abort";
    case FinishReason::kError: return "error";
  }
  return "?";
}

}  // namespace zl
