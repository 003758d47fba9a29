#include "server/stats_monitor.h"

#include <chrono>
#include <sstream>

namespace zl::server {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Bucket edges in seconds (vLLM's for the metrics it has), or tokens.
constexpr double kLatencyBuckets[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                      1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
constexpr double kTokenBuckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
constexpr double kRequestBuckets[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,  15.0,  20.0,
                                      30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
constexpr double kIterationBuckets[] = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
constexpr double kLengthBuckets[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
constexpr double kGapBuckets[] = {1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 1e-2, 0.1};

// A Prometheus histogram from an engine Histogram recorded in ns (scale
// 1e-9 → seconds) or in plain units (scale 1).
template <size_t N>
void histogram(std::ostringstream& out, const std::string& label, const char* name, const char* help,
               const Histogram& h, const double (&edges)[N], double scale = 1e-9) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " histogram\n";
  const std::string inner = label.substr(1, label.size() - 2);  // model_name="..."
  for (double edge : edges) {
    uint64_t at_most = h.count_at_most(static_cast<uint64_t>(edge / scale));
    out << name << "_bucket{" << inner << ",le=\"" << edge << "\"} " << at_most << '\n';
  }
  out << name << "_bucket{" << inner << ",le=\"+Inf\"} " << h.count() << '\n';
  out << name << "_sum" << label << ' ' << static_cast<double>(h.sum()) * scale << '\n';
  out << name << "_count" << label << ' ' << h.count() << '\n';
}

void counter_by_reason(std::ostringstream& out, const std::string& model_name, FinishReason reason, int64_t value) {
  static const char* kName = "vllm:request_success_total";
  if (reason == FinishReason::kStop) out << "# HELP " << kName << " Requests finished, by reason.\n# TYPE " << kName << " counter\n";
  out << kName << "{model_name=\"" << model_name << "\",finished_reason=\"" << finish_reason_name(reason) << "\"} "
      << value << '\n';
}

// NVML's counters of the engine's GPU (core/gpu_counters.h); the
// utilisations only where NVML supports them (not in MIG mode).
template <typename Metric>
void gpu_metrics(const GpuSample& gpu, const Metric& metric) {
  if (gpu.sm_utilization)
    metric("zerolayer:gpu_utilization_perc", "gauge",
           "Share of NVML's last sample period (1/6 s to 1 s) in which a kernel ran on the GPU.", *gpu.sm_utilization);
  if (gpu.memory_utilization)
    metric("zerolayer:gpu_memory_utilization_perc", "gauge",
           "Share of NVML's last sample period in which GPU memory was read or written (memory throughput).",
           *gpu.memory_utilization);
  metric("zerolayer:gpu_memory_used_bytes", "gauge", "GPU memory in use, all processes.", gpu.memory_used_bytes);
  metric("zerolayer:gpu_memory_total_bytes", "gauge", "GPU memory installed.", gpu.memory_total_bytes);
}

}  // namespace

StatsMonitor::StatsMonitor(Engine& engine, double interval_s) : engine_(engine), interval_s_(interval_s) {
  thread_ = std::thread([this] { run(); });
}

StatsMonitor::~StatsMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

double StatsMonitor::seconds_waiting() const {
  int64_t since = waiting_since_ns_.load(std::memory_order_acquire);
  return since == 0 ? 0.0 : static_cast<double>(now_ns() - since) * 1e-9;
}

void StatsMonitor::request_fresh(Callback done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiters_.push_back(std::move(done));
  }
  wake_.notify_all();
}

void StatsMonitor::run() {
  while (true) {
    std::vector<Callback> waiters;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, std::chrono::duration<double>(interval_s_), [&] { return stop_ || !waiters_.empty(); });
      if (stop_) break;
      waiters.swap(waiters_);
    }
    waiting_since_ns_.store(now_ns(), std::memory_order_release);
    EngineStats stats = engine_.stats();
    waiting_since_ns_.store(0, std::memory_order_release);
    for (Callback& done : waiters) done(stats);
  }
  // Callers waiting at shutdown still get an answer.
  std::vector<Callback> waiters;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiters.swap(waiters_);
  }
  if (!waiters.empty()) {
    EngineStats stats = engine_.stats();
    for (Callback& done : waiters) done(stats);
  }
}

namespace {

// vLLM's info gauges: their labels carry the values. lora_requests_info's
// value is the time it was set (vLLM's set_to_current_time).
void info_metrics(std::ostringstream& out, const CacheConfigInfo& c) {
  out << "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
      << "# TYPE vllm:cache_config_info gauge\n"
      << "vllm:cache_config_info{block_size=\"" << c.block_size << "\",cache_dtype=\"" << c.cache_dtype
      << "\",enable_prefix_caching=\"True\",engine=\"0\",num_cpu_blocks=\"0\",num_gpu_blocks=\"" << c.num_blocks
      << "\",cache_policy=\"" << c.cache_policy << "\"} 1.0\n";
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  out << "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
      << "# TYPE vllm:lora_requests_info gauge\n"
      << "vllm:lora_requests_info{max_lora=\"0\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"} "
      << std::fixed << now << std::defaultfloat << '\n';
}

}  // namespace

std::string prometheus_text(const EngineStats& s, const HttpCounters& http, const std::string& model_name,
                            const CacheConfigInfo& cache, const GpuSample* gpu) {
  std::ostringstream out;
  std::string label = "{model_name=\"" + model_name + "\"}";
  auto metric = [&](const char* name, const char* type, const char* help, auto value) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
        << name << label << ' ' << value << '\n';
  };
  double usage = s.kv.num_blocks > 0 ? static_cast<double>(s.kv.num_used_blocks) / s.kv.num_blocks : 0.0;
  metric("vllm:num_requests_running", "gauge", "Requests in the running batch.", s.num_running);
  metric("vllm:num_requests_waiting", "gauge", "Requests waiting to be admitted.", s.num_waiting);
  metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage: 1 means every block is held.", usage);
  metric("vllm:num_preemptions_total", "counter", "Preemptions (paged policy).", s.num_preemptions);
  metric("zerolayer:prompt_passes_total", "counter", "Passes of prompts alone while others decoded (--prefill-first-ms).",
         s.num_prompt_passes);
  metric("vllm:prompt_tokens_total", "counter", "Prompt tokens admitted.", s.prompt_tokens_total);
  metric("vllm:generation_tokens_total", "counter", "Tokens generated.", s.generation_tokens_total);
  for (FinishReason reason : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAborted, FinishReason::kError})
    counter_by_reason(out, model_name, reason, s.num_finished_by_reason[static_cast<int>(reason)]);
  metric("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         s.kv.prefix_query_tokens);
  metric("vllm:prefix_cache_hits_total", "counter", "Prompt tokens served from the prefix cache.",
         s.kv.prefix_hit_tokens);
  histogram(out, label, "vllm:time_to_first_token_seconds", "Time to first token.", s.time_to_first_token_ns,
            kLatencyBuckets);
  histogram(out, label, "vllm:inter_token_latency_seconds", "Time between consecutive tokens of a request.",
            s.inter_token_ns, kTokenBuckets);
  histogram(out, label, "vllm:e2e_request_latency_seconds", "Submit to terminal event.", s.e2e_ns, kRequestBuckets);
  histogram(out, label, "vllm:request_queue_time_seconds", "Submit to admission.", s.queue_ns, kRequestBuckets);
  histogram(out, label, "vllm:request_prefill_time_seconds", "Admission to prompt computed.", s.prefill_ns,
            kRequestBuckets);
  histogram(out, label, "vllm:request_decode_time_seconds", "First token to finish.", s.decode_ns, kRequestBuckets);
  histogram(out, label, "vllm:request_prompt_tokens", "Prompt tokens per finished request.", s.prompt_tokens,
            kLengthBuckets, 1.0);
  histogram(out, label, "vllm:request_generation_tokens", "Generated tokens per finished request.",
            s.generation_tokens, kLengthBuckets, 1.0);
  histogram(out, label, "vllm:iteration_tokens_total", "Tokens per engine step.", s.batch_tokens, kIterationBuckets,
            1.0);
  histogram(out, label, "zerolayer:scheduling_gap_seconds",
            "Host time between two forward passes (sampling, publishing, scheduling).", s.sched_gap_ns, kGapBuckets);
  metric("zerolayer:kv_fragmentation_internal", "gauge", "KV slots held but never usable, share of the pool.",
         s.kv.internal_fragmentation);
  metric("zerolayer:kv_fragmentation_external", "gauge",
         "Free or cached KV blocks idle because the waiting request found no run long enough, share of the pool.",
         s.kv.external_fragmentation);
  metric("zerolayer:kv_free_space_scatter", "gauge",
         "1 - largest run of free or cached KV blocks / all free or cached blocks.", s.kv.free_space_scatter);
  metric("zerolayer:kv_block_moves_total", "counter", "KV blocks copied by compaction.", s.kv.num_block_moves);
  metric("zerolayer:kv_signatures_live", "gauge", "Block signatures in the prefix index.", s.kv.num_live_signatures);
  metric("zerolayer:kv_compactions_total", "counter", "Contiguous-pool compactions.", s.kv.num_compactions);
  metric("zerolayer:kv_compaction_copy_seconds_total", "counter",
         "Time compaction's KV copies took, run in slices before passes (--compaction-bytes-per-step).",
         static_cast<double>(s.compaction_copy_ns_total) * 1e-9);
  metric("zerolayer:kv_compaction_copy_max_seconds", "gauge", "The longest compaction copy before one pass.",
         static_cast<double>(s.compaction_copy_ns_max) * 1e-9);
  metric("zerolayer:engine_drains_total", "counter",
         "Steps whose planning waited for the pass in flight to end (overlap scheduling: a preemption whose victim "
         "is in that pass).",
         s.num_drains);
  metric("zerolayer:kv_blocks_total", "gauge", "Blocks in the KV pool.", s.kv.num_blocks);
  metric("zerolayer:kv_blocks_used", "gauge", "KV blocks held by requests.", s.kv.num_used_blocks);
  metric("zerolayer:kv_blocks_cached", "gauge", "Free KV blocks kept for prefix reuse.", s.kv.num_cached_blocks);
  metric("zerolayer:kv_blocks_free", "gauge", "Free, unsigned KV blocks.", s.kv.num_free_blocks);
  metric("zerolayer:engine_steps_total", "counter", "Engine steps (forward passes).", s.num_steps);
  metric("zerolayer:requests_finished_total", "counter", "Requests that reached their terminal event.", s.num_finished);
  metric("zerolayer:http_requests_total", "counter", "HTTP requests received.", http.num_requests);
  metric("zerolayer:http_client_disconnects_total", "counter", "Clients gone before their response ended.",
         http.num_disconnects);
  metric("zerolayer:http_completions_in_flight", "gauge", "Completion requests being served.", http.num_jobs_in_flight);
  info_metrics(out, cache);
  if (gpu) gpu_metrics(*gpu, metric);
  return out.str();
}

}  // namespace zl::server
