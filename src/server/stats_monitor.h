// Watches the engine from outside its thread: a monitor thread asks the
// engine for a stats snapshot every interval (and at once when a /metrics
// request wants a fresh one). Engine::stats() blocks until the engine thread
// answers, so the age of the call in flight is the health signal: a loop that
// has not answered for longer than the health timeout is stalled (/health 503).
// I/O threads never call stats() themselves.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu_counters.h"
#include "zerolayer/engine.h"

namespace zl::server {

class StatsMonitor {
 public:
  using Callback = std::function<void(const EngineStats&)>;

  StatsMonitor(Engine& engine, double interval_s);
  // Joins; the engine must still be alive (its loop answers the last call).
  ~StatsMonitor();
  StatsMonitor(const StatsMonitor&) = delete;
  StatsMonitor& operator=(const StatsMonitor&) = delete;

  // Seconds the stats() call in flight has been waiting; 0 when none is.
  double seconds_waiting() const;
  // Calls done(snapshot) on the monitor thread, with a snapshot taken after this call.
  void request_fresh(Callback done);

 private:
  void run();

  Engine& engine_;
  double interval_s_;
  std::atomic<int64_t> waiting_since_ns_{0};  // steady clock; 0: no call in flight
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Callback> waiters_;
  bool stop_ = false;
  std::thread thread_;
};

// Extra counters the HTTP layer keeps, shown beside the engine's.
struct HttpCounters {
  int64_t num_requests = 0;
  int64_t num_disconnects = 0;
  int64_t num_jobs_in_flight = 0;
};

// What vllm:cache_config_info says of the KV cache (fixed at start).
struct CacheConfigInfo {
  int32_t block_size = 0;
  std::string cache_dtype;   // kv_cache_dtype_name()
  int64_t num_blocks = 0;
  std::string cache_policy;  // zerolayer's: contiguous, paged, hybrid
};

// Prometheus text exposition; vLLM's names where they exist
// (vllm:num_requests_running, vllm:num_requests_waiting, vllm:kv_cache_usage_perc, ...),
// and the info gauges the Gateway API inference extension and llm-d read:
// vllm:cache_config_info, vllm:lora_requests_info (no adapters here).
// `gpu`: the engine's CUDA device's NVML counters (zerolayer:gpu_*), or
// nullptr on the CPU or without NVML, when those metrics are left out.
std::string prometheus_text(const EngineStats& stats, const HttpCounters& http, const std::string& model_name,
                            const CacheConfigInfo& cache, const GpuSample* gpu = nullptr);

}  // namespace zl::server
