#include "monitor_view.h"

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace zl::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kHistogramNames[ZL_STATS_NUM_HISTOGRAMS] = {
    "sched_gap_ns", "batch_seqs",        "batch_tokens",       "ttft_ns",
    "inter_token_ns", "e2e_ns",          "queue_ns",           "prefill_ns",
    "decode_ns",    "prompt_tokens",     "generation_tokens",  "phase_transport_in_ns",
    "phase_admission_ns", "phase_queue_ns", "phase_transport_out_ns", "phase_total_ns"};
constexpr const char* kTransportNames[] = {"in-process", "http", "shm"};
constexpr const char* kFinishNames[] = {"stop", "length", "abort", "error"};

// A request's phases in zl_stats_request's order; they tile its total.
constexpr int kNumPhases = 7;
constexpr const char* kPhaseNames[kNumPhases] = {"transport_in", "admission", "queue", "prefill",
                                                 "decode", "other", "transport_out"};

std::array<uint64_t, kNumPhases> phases_of(const zl_stats_request& r) {
  return {r.transport_in_ns, r.admission_ns, r.queue_ns, r.prefill_ns, r.decode_ns, r.other_ns, r.transport_out_ns};
}

uint64_t total_of(const zl_stats_request& r) { return r.delivered_ns - (r.sent_ns ? r.sent_ns : r.submitted_ns); }

// Quantile q of the decode steps the record kept (its first ZL_STATS_MAX_DECODE_STEPS).
uint64_t step_quantile(const zl_stats_request& r, double q) {
  const size_t n = std::min<size_t>(r.num_decode_steps, ZL_STATS_MAX_DECODE_STEPS);
  if (n == 0) return 0;
  std::vector<uint32_t> steps(r.decode_step_ns, r.decode_step_ns + n);
  std::sort(steps.begin(), steps.end());
  return steps[std::min(n - 1, static_cast<size_t>(q * static_cast<double>(n - 1) + 0.5))];
}

std::string format(const char* pattern, ...) {
  char buffer[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(buffer, sizeof(buffer), pattern, args);
  va_end(args);
  return buffer;
}

std::string duration(uint64_t ns) {
  if (ns < 1000) return format("%llu ns", static_cast<unsigned long long>(ns));
  if (ns < 1000000) return format("%.1f µs", static_cast<double>(ns) / 1e3);
  if (ns < 1000000000) return format("%.2f ms", static_cast<double>(ns) / 1e6);
  return format("%.2f s", static_cast<double>(ns) / 1e9);
}

double us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

double share(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

std::string hex(const uint8_t (&bytes)[16]) {
  std::string out;
  for (uint8_t b : bytes) out += format("%02x", b);
  return out;
}

// The values recorded between two snapshots (all of `now` without `before`).
Histogram window(const Histogram& now, const Histogram* before) {
  if (before == nullptr || before->count() > now.count()) return now;
  std::array<uint64_t, Histogram::kNumBuckets> diff;
  for (size_t b = 0; b < diff.size(); ++b) diff[b] = now.buckets()[b] - before->buckets()[b];
  return Histogram::from_buckets(diff, now.count() - before->count(), now.sum() - before->sum(), now.max());
}

int64_t num_finished(const zl_stats_counters& c) {
  int64_t n = 0;
  for (int64_t v : c.num_finished_by_reason) n += v;
  return n;
}

struct Rates {
  double seconds = 0;
  double generated = 0, prompt = 0, steps = 0;
  const StatsSnapshot* since = nullptr;  // the previous refresh, or nullptr: since start
};

Rates rates_of(const StatsSnapshot& now, const StatsSnapshot* before) {
  Rates r;
  const zl_stats_counters& c = now.counters;
  if (before != nullptr && now.read_ns > before->read_ns) {
    r.seconds = static_cast<double>(now.read_ns - before->read_ns) / 1e9;
    r.since = before;
    r.generated = static_cast<double>(c.generation_tokens_total - before->counters.generation_tokens_total) / r.seconds;
    r.prompt = static_cast<double>(c.prompt_tokens_total - before->counters.prompt_tokens_total) / r.seconds;
    r.steps = static_cast<double>(c.num_steps - before->counters.num_steps) / r.seconds;
  } else if (now.read_ns > now.config.start_ns) {
    r.seconds = static_cast<double>(now.read_ns - now.config.start_ns) / 1e9;
    r.generated = static_cast<double>(c.generation_tokens_total) / r.seconds;
    r.prompt = static_cast<double>(c.prompt_tokens_total) / r.seconds;
    r.steps = static_cast<double>(c.num_steps) / r.seconds;
  }
  return r;
}

std::string quantiles(const Histogram& h) {
  if (h.count() == 0) return "-";
  return "P50 " + duration(h.quantile(0.5)) + " · P99 " + duration(h.quantile(0.99));
}

std::string gpu_line(const GpuView& gpu) {
  if (gpu.device.empty()) return "";
  if (!gpu.sample) return format("gpu         %s: no counters (%s)\n", gpu.device.c_str(), gpu.unavailable.c_str());
  const GpuSample& g = *gpu.sample;
  std::string busy = g.sm_utilization ? format("kernels running %.0f%% · memory busy %.0f%% · ", 100.0 * *g.sm_utilization,
                                               100.0 * *g.memory_utilization)
                                      : std::string("utilisation not supported (MIG?) · ");
  return format("gpu         %s %s · %smemory used %.1f of %.1f GiB\n", gpu.device.c_str(), g.name.c_str(), busy.c_str(),
                static_cast<double>(g.memory_used_bytes) / (1ull << 30),
                static_cast<double>(g.memory_total_bytes) / (1ull << 30));
}

json gpu_json(const std::string& device, const GpuSample& g) {
  json out{{"device", device}, {"name", g.name}};
  out["sm_utilization"] = g.sm_utilization ? json(*g.sm_utilization) : json(nullptr);
  out["memory_utilization"] = g.memory_utilization ? json(*g.memory_utilization) : json(nullptr);
  out["memory_used_bytes"] = g.memory_used_bytes;
  out["memory_total_bytes"] = g.memory_total_bytes;
  return out;
}

}  // namespace

std::string render_summary(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& name,
                           const GpuView& gpu) {
  const zl_stats_counters& c = now.counters;
  const zl_stats_config& cfg = now.config;
  const Rates rates = rates_of(now, before);
  const std::string over = rates.since ? format("last %.1f s", rates.seconds) : "mean since start";
  std::string out = format("zerolayer monitor · %s · pid %d · %s · up %s · stats %s old\n", name.c_str(), cfg.server_pid,
                           cfg.model, duration(now.read_ns - cfg.start_ns).c_str(),
                           duration(now.read_ns - std::min(now.read_ns, c.lock.publish_ns)).c_str());
  out += format("requests    running %d · waiting %d · finished %lld (stop %lld, length %lld, abort %lld, error %lld) · "
                "preempted %lld\n",
                c.num_running, c.num_waiting, static_cast<long long>(num_finished(c)),
                static_cast<long long>(c.num_finished_by_reason[0]), static_cast<long long>(c.num_finished_by_reason[1]),
                static_cast<long long>(c.num_finished_by_reason[2]), static_cast<long long>(c.num_finished_by_reason[3]),
                static_cast<long long>(c.num_preemptions));
  out += format("throughput  %.1f tokens/s generated · %.1f tokens/s prompt · %.1f steps/s  [%s]\n", rates.generated,
                rates.prompt, rates.steps, over.c_str());
  const Histogram& seqs = now.histograms[ZL_STATS_HIST_BATCH_SEQS];
  const Histogram& tokens = now.histograms[ZL_STATS_HIST_BATCH_TOKENS];
  out += format("batch       %.1f sequences · %.1f tokens per step (mean since start)\n", seqs.mean(), tokens.mean());
  const double blocks = c.kv_num_blocks;
  out += format("KV cache    used %.1f%% (%d of %d blocks) · cached %.1f%% · free %.1f%% · fragmentation internal "
                "%.1f%%, external %.1f%%\n",
                share(c.kv_num_used_blocks, blocks), c.kv_num_used_blocks, c.kv_num_blocks,
                share(c.kv_num_cached_blocks, blocks), share(c.kv_num_free_blocks, blocks),
                100.0 * c.kv_internal_fragmentation, 100.0 * c.kv_external_fragmentation);
  out += format("prefix      hit rate %.1f%% of prompt tokens · %lld of %lld admissions reused blocks · %zu chains\n",
                share(static_cast<double>(c.prefix_hit_tokens), static_cast<double>(c.prefix_query_tokens)),
                static_cast<long long>(c.prefix_num_hits), static_cast<long long>(c.prefix_num_queries),
                now.signatures.size());
  const Histogram* gap_before = before ? &before->histograms[ZL_STATS_HIST_SCHED_GAP_NS] : nullptr;
  const Histogram gap = window(now.histograms[ZL_STATS_HIST_SCHED_GAP_NS], gap_before);
  out += format("gap         %s · max %s  [%s: %llu steps]\n", quantiles(gap).c_str(),
                duration(now.histograms[ZL_STATS_HIST_SCHED_GAP_NS].max()).c_str(),
                gap_before && gap.count() > 0 ? over.c_str() : "since start", static_cast<unsigned long long>(gap.count()));
  out += "TTFT        " + quantiles(now.histograms[ZL_STATS_HIST_TTFT_NS]) + "\nITL         " +
         quantiles(now.histograms[ZL_STATS_HIST_INTER_TOKEN_NS]) + "\ne2e         " +
         quantiles(now.histograms[ZL_STATS_HIST_E2E_NS]) + "  (all requests since start)\n";
  return out + gpu_line(gpu);
}

std::string render_latency_breakdown(const StatsSnapshot& s, size_t max_requests) {
  const size_t n = std::min(max_requests, s.requests.size());
  std::string out = format("Latency breakdown of the last %zu finished requests (µs; the phases add up to total)\n", n);
  for (size_t i = s.requests.size() - n; i < s.requests.size(); ++i) {
    const zl_stats_request& r = s.requests[i];
    out += format("\nrequest %llu (%s, client id %llu): %d prompt tokens (%d cached), %d generated, %s, %d preemptions\n",
                  static_cast<unsigned long long>(r.request_id), kTransportNames[r.transport],
                  static_cast<unsigned long long>(r.client_tag), r.num_prompt_tokens, r.num_cached_prompt_tokens,
                  r.num_generated_tokens, kFinishNames[r.finish_reason], r.num_preemptions);
    const auto phases = phases_of(r);
    for (int p = 0; p < kNumPhases; ++p) {
      out += format("  %-14s %12.1f", kPhaseNames[p], us(phases[p]));
      if (p == 3 && r.num_prefill_chunks > 0) {
        out += format("  %u chunks:", r.num_prefill_chunks);
        for (uint32_t k = 0; k < std::min(r.num_prefill_chunks, ZL_STATS_MAX_PREFILL_CHUNKS); ++k)
          out += format(" %d tokens %.1f", r.prefill_chunks[k].num_tokens, us(r.prefill_chunks[k].ns));
      }
      if (p == 4 && r.num_decode_steps > 0)
        out += format("  %u steps: mean %.1f · p50 %.1f · p99 %.1f · max %.1f", r.num_decode_steps,
                      us(r.decode_ns) / r.num_decode_steps, us(step_quantile(r, 0.5)), us(step_quantile(r, 0.99)),
                      us(r.decode_step_max_ns));
      out += '\n';
    }
    out += format("  %-14s %12.1f  (%s -> terminal event with the transport)\n", "total", us(total_of(r)),
                  r.sent_ns ? "client send" : "engine submit");
  }
  out += "\nAggregate over all finished requests (µs)\n";
  out += format("  %-14s %10s %10s %10s %10s %10s %10s\n", "phase", "count", "mean", "p50", "p90", "p99", "max");
  const std::pair<const char*, int> rows[] = {
      {"transport_in", ZL_STATS_HIST_PHASE_TRANSPORT_IN_NS}, {"admission", ZL_STATS_HIST_PHASE_ADMISSION_NS},
      {"queue", ZL_STATS_HIST_PHASE_QUEUE_NS},               {"prefill", ZL_STATS_HIST_PREFILL_NS},
      {"decode", ZL_STATS_HIST_DECODE_NS},                   {"transport_out", ZL_STATS_HIST_PHASE_TRANSPORT_OUT_NS},
      {"total", ZL_STATS_HIST_PHASE_TOTAL_NS}};
  for (const auto& [label, id] : rows) {
    const Histogram& h = s.histograms[size_t(id)];
    out += format("  %-14s %10llu %10.1f %10.1f %10.1f %10.1f %10.1f\n", label,
                  static_cast<unsigned long long>(h.count()), h.mean() / 1e3, us(h.quantile(0.5)), us(h.quantile(0.9)),
                  us(h.quantile(0.99)), us(h.max()));
  }
  return out;
}

std::string render_signatures(const StatsSnapshot& s) {
  const zl_stats_counters& c = s.counters;
  std::string out = format("Signature histogram: %zu prefix chains (the top %u are kept), %lld of %lld admissions "
                           "reused cached blocks, %lld prompt tokens saved\n",
                           s.signatures.size(), ZL_STATS_MAX_SIGNATURES, static_cast<long long>(c.prefix_num_hits),
                           static_cast<long long>(c.prefix_num_queries), static_cast<long long>(c.prefix_hit_tokens));
  if (s.signatures.empty()) return out + "  (no admission has reused a cached prefix yet)\n";
  out += format("  %4s %10s %13s %7s %7s  %-35s %s\n", "rank", "hits", "tokens saved", "blocks", "tokens",
                "chain: first block → last block", "");
  const double top = static_cast<double>(s.signatures.front().hits);
  for (size_t i = 0; i < s.signatures.size(); ++i) {
    const zl_stats_signature& e = s.signatures[i];
    const std::string hits = e.error ? format("%llu±%llu", static_cast<unsigned long long>(e.hits),
                                              static_cast<unsigned long long>(e.error))
                                     : format("%llu", static_cast<unsigned long long>(e.hits));
    const int bar = top > 0 ? static_cast<int>(24.0 * static_cast<double>(e.hits) / top + 0.5) : 0;
    std::string bars;
    for (int b = 0; b < bar; ++b) bars += "█";
    out += format("  %4zu %10s %13llu %7d %7d  %.12s… → %.12s…  %s\n", i + 1, hits.c_str(),
                  static_cast<unsigned long long>(e.tokens_saved), e.num_blocks, e.num_tokens, hex(e.root).c_str(),
                  hex(e.signature).c_str(), bars.c_str());
  }
  return out;
}

std::string render_config(const StatsSnapshot& s, const std::string& name) {
  const zl_stats_config& c = s.config;
  std::string out = "Configuration of the server at " + name + "\n";
  auto row = [&](const char* key, const std::string& value) { out += format("  %-24s %s\n", key, value.c_str()); };
  row("model", c.model);
  row("weight format", c.weight_format);
  row("device", c.device[0] != '\0' ? c.device : "(not published)");
  row("server pid", std::to_string(c.server_pid));
  row("vocab size", std::to_string(c.vocab_size));
  row("max seq len", std::to_string(c.max_seq_len));
  row("max num seqs", std::to_string(c.max_num_seqs));
  row("max num batched tokens", std::to_string(c.max_num_batched_tokens));
  row("max num waiting", std::to_string(c.max_num_waiting));
  row("cache policy", c.cache_policy);
  row("block size", std::to_string(c.block_size) + " tokens");
  row("KV blocks", std::to_string(c.num_kv_blocks) + " (" + std::to_string(c.kv_capacity_tokens) + " tokens)");
  row("compute threads", std::to_string(c.num_threads));
  return out;
}

namespace {

json histogram_json(const Histogram& h) {
  return json{{"count", h.count()}, {"sum", h.sum()},           {"mean", h.mean()},
              {"p50", h.quantile(0.5)}, {"p90", h.quantile(0.9)}, {"p99", h.quantile(0.99)},
              {"max", h.max()}};
}

json request_json(const zl_stats_request& r) {
  json phases = json::object();
  const auto values = phases_of(r);
  for (int p = 0; p < kNumPhases; ++p) phases[kPhaseNames[p]] = values[p];
  json chunks = json::array();
  for (uint32_t k = 0; k < std::min(r.num_prefill_chunks, ZL_STATS_MAX_PREFILL_CHUNKS); ++k)
    chunks.push_back({{"tokens", r.prefill_chunks[k].num_tokens}, {"ns", r.prefill_chunks[k].ns}});
  const size_t kept = std::min<size_t>(r.num_decode_steps, ZL_STATS_MAX_DECODE_STEPS);
  return json{{"request_id", r.request_id},
              {"client_tag", r.client_tag},
              {"transport", kTransportNames[r.transport]},
              {"finish_reason", kFinishNames[r.finish_reason]},
              {"num_prompt_tokens", r.num_prompt_tokens},
              {"num_cached_prompt_tokens", r.num_cached_prompt_tokens},
              {"num_generated_tokens", r.num_generated_tokens},
              {"num_preemptions", r.num_preemptions},
              {"sent_ns", r.sent_ns},
              {"submitted_ns", r.submitted_ns},
              {"finished_ns", r.finished_ns},
              {"delivered_ns", r.delivered_ns},
              {"total_ns", total_of(r)},
              {"phases_ns", phases},
              {"prefill_chunks", {{"count", r.num_prefill_chunks}, {"first", chunks}}},
              {"decode_steps",
               {{"count", r.num_decode_steps},
                {"sum_ns", r.decode_ns},
                {"max_ns", r.decode_step_max_ns},
                {"p50_ns", step_quantile(r, 0.5)},
                {"p99_ns", step_quantile(r, 0.99)},
                {"first_ns", std::vector<uint32_t>(r.decode_step_ns, r.decode_step_ns + kept)}}}};
}

json counters_json(const zl_stats_counters& c) {
  return json{{"publish_ns", c.lock.publish_ns},
              {"num_running", c.num_running},
              {"num_waiting", c.num_waiting},
              {"num_steps", c.num_steps},
              {"num_finished", num_finished(c)},
              {"num_finished_by_reason",
               {{"stop", c.num_finished_by_reason[0]}, {"length", c.num_finished_by_reason[1]},
                {"abort", c.num_finished_by_reason[2]}, {"error", c.num_finished_by_reason[3]}}},
              {"num_preemptions", c.num_preemptions},
              {"prompt_tokens_total", c.prompt_tokens_total},
              {"generation_tokens_total", c.generation_tokens_total},
              {"kv_num_blocks", c.kv_num_blocks},
              {"kv_num_free_blocks", c.kv_num_free_blocks},
              {"kv_num_cached_blocks", c.kv_num_cached_blocks},
              {"kv_num_used_blocks", c.kv_num_used_blocks},
              {"kv_num_live_signatures", c.kv_num_live_signatures},
              {"kv_internal_fragmentation", c.kv_internal_fragmentation},
              {"kv_reserved_ahead", c.kv_reserved_ahead},
              {"kv_external_fragmentation", c.kv_external_fragmentation},
              {"prefix_query_tokens", c.prefix_query_tokens},
              {"prefix_hit_tokens", c.prefix_hit_tokens},
              {"prefix_num_queries", c.prefix_num_queries},
              {"prefix_num_hits", c.prefix_num_hits},
              {"kv_num_evictions", c.kv_num_evictions},
              {"kv_num_compactions", c.kv_num_compactions},
              {"kv_num_block_moves", c.kv_num_block_moves},
              {"num_requests_traced", c.num_requests_traced}};
}

json config_json(const zl_stats_config& c) {
  return json{{"model", c.model},
              {"weight_format", c.weight_format},
              {"device", c.device},
              {"server_pid", c.server_pid},
              {"start_ns", c.start_ns},
              {"vocab_size", c.vocab_size},
              {"max_seq_len", c.max_seq_len},
              {"max_num_seqs", c.max_num_seqs},
              {"max_num_batched_tokens", c.max_num_batched_tokens},
              {"max_num_waiting", c.max_num_waiting},
              {"cache_policy", c.cache_policy},
              {"block_size", c.block_size},
              {"num_kv_blocks", c.num_kv_blocks},
              {"kv_capacity_tokens", c.kv_capacity_tokens},
              {"num_threads", c.num_threads}};
}

}  // namespace

nlohmann::ordered_json monitor_json(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& name,
                                    const GpuView& gpu) {
  const Rates rates = rates_of(now, before);
  json histograms = json::object();
  for (size_t i = 0; i < now.histograms.size(); ++i) histograms[kHistogramNames[i]] = histogram_json(now.histograms[i]);
  json signatures = json::array();
  for (const zl_stats_signature& e : now.signatures)
    signatures.push_back({{"root", hex(e.root)},
                          {"signature", hex(e.signature)},
                          {"num_blocks", e.num_blocks},
                          {"num_tokens", e.num_tokens},
                          {"hits", e.hits},
                          {"error", e.error},
                          {"tokens_saved", e.tokens_saved},
                          {"last_hit", e.last_hit}});
  json requests = json::array();
  for (const zl_stats_request& r : now.requests) requests.push_back(request_json(r));
  json out{{"segment", name},
           {"read_ns", now.read_ns},
           {"config", config_json(now.config)},
           {"counters", counters_json(now.counters)},
           {"rates",
            {{"seconds", rates.seconds},
             {"since", rates.since ? "previous refresh" : "start"},
             {"generation_tokens_per_s", rates.generated},
             {"prompt_tokens_per_s", rates.prompt},
             {"steps_per_s", rates.steps}}},
           {"histograms", histograms},
           {"signatures", signatures},
           {"requests", requests},
           {"requests_dropped", now.num_requests_dropped}};
  if (gpu.sample) out["gpu"] = gpu_json(gpu.device, *gpu.sample);
  else if (!gpu.device.empty()) out["gpu_unavailable"] = {{"device", gpu.device}, {"reason", gpu.unavailable}};
  return out;
}

}  // namespace zl::cli
