#include "server/stats_monitor.h"

#include <chrono>
#include <sstream>

namespace zl::server {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
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

std::string prometheus_text(const EngineStats& s, const HttpCounters& http, const std::string& model_name) {
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
  metric("vllm:prompt_tokens_total", "counter", "Prompt tokens admitted.", s.prompt_tokens_total);
  metric("vllm:generation_tokens_total", "counter", "Tokens generated.", s.generation_tokens_total);
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
  return out.str();
}

}  // namespace zl::server
