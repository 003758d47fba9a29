// Engine loop benchmarks (issue 3), one JSON line per configuration:
//   --mode gap: the scheduling gap (host time between two forward passes:
//     sampling, publishing, scheduling) with N sequences decoding at once on
//     a model whose forward pass is nearly free (default dummy:tiny).
//     --arrival burst (default) submits N equal requests at once: they decode
//     in step, and the admission of the ~N/2 that arrive during the first
//     step and the two waves of finishes are the run's largest gaps (its P99
//     is about its third-largest). --arrival closed keeps N in flight with
//     spread lengths, each finish replaced: admissions and finishes spread
//     over the steps as under a steady load of N clients.
//   --mode throughput: decode tokens/s with N concurrent sequences
//     (default dummy:llama-110m).
// Each configuration runs --runs times on a fresh engine; min and median.
// --overlap off turns overlap scheduling off (EngineConfig::overlap_scheduling),
// to compare both in one run. --sampled F makes that share of the requests
// sample (temperature 0.8, top-p 0.95, repetition / presence / frequency
// penalties, a seed each); the rest are greedy. --constrained F puts that
// share under a JSON schema (structured output): their masks are computed
// with the pass's sampling.
// --kv-cache-memory B sizes the KV pool (default 1 GiB): a pool too small for
// --arrival closed's spread lengths fragments, and compaction copies KV in
// slices of --compaction-bytes-per-step (0: each at once; --kv-populate
// commits the pool first, so a copy's time is not its page faults); each line gives
// the compactions, blocks moved and steps that waited for a pass in flight
// (summed over the runs), the most blocks one step moved, the longest copy
// before one pass (what a step's slice costs the running requests) and the
// inter-token time's P99 and max.
// The gap's tail on a shared machine is mostly other processes taking the
// engine thread's core: each line also gives the involuntary context switches
// of all the engine's threads per second of the run and the 1-minute load
// average at its end, to tell a busy machine from a slow engine.
//   build/bench/engine_bench --mode gap --seqs 1,16,64,256
//   build/bench/engine_bench --mode gap --arrival closed --seqs 1,16,64,256
//   build/bench/engine_bench --mode gap --sampled 0.5 --seqs 256 --cache-policy paged
//   build/bench/engine_bench --mode throughput --model dummy:llama-110m --seqs 1,8,32,64
//   build/bench/engine_bench --mode throughput --seqs 64 --constrained 0.5
//   build/bench/engine_bench --mode throughput --arrival closed --seqs 32 --kv-cache-memory 64000000 --compaction-bytes-per-step 0
#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/inbox.h"
#include "zerolayer/engine.h"
#include "zerolayer/stats_protocol.h"

namespace zl {
namespace {

// Counts finished requests and wakes the bench thread: at each one when it
// submits replacements (closed arrival), else only at the last, so that a
// burst's finish waves do not also wake it (a wake may run on the engine
// thread, inside the gap being measured).
class CountingSink : public EventSink {
 public:
  CountingSink(std::atomic<uint32_t>* finished, uint32_t total, bool wake_each)
      : finished_(finished), total_(total), wake_each_(wake_each) {}
  void on_token(const TokenEvent&) override {}
  void on_finish(const FinishEvent&) override {
    const uint32_t done = finished_->fetch_add(1, std::memory_order_acq_rel) + 1;
    if (wake_each_ || done == total_) futex_wake_all(finished_);
  }

 private:
  std::atomic<uint32_t>* finished_;
  const uint32_t total_;
  const bool wake_each_;
};

// What one run submits. burst: num_seqs requests of max_new tokens at once,
// so they decode in step and finish in two waves. closed: num_seqs in flight
// from start to end, each finish replaced by a new request, rounds * num_seqs
// requests in all, each of a seeded uniform max_new / 2 .. 3 * max_new / 2
// tokens, so that admissions and finishes spread over the steps as under a
// steady load of num_seqs concurrent clients.
struct Workload {
  bool closed = false;
  int64_t kv_cache_bytes = int64_t{1} << 30;
  int64_t compaction_bytes_per_step = EngineConfig{}.compaction_bytes_per_step;
  bool kv_populate = false;  // commit the pool at start (serve's default)
  int num_seqs = 1;
  int max_new = 200;
  int rounds = 4;
  double sampled = 0.0;  // share of requests that sample, spread evenly
  double constrained = 0.0;  // share under kArraySchema, spread evenly
};

// A JSON schema whose output outlasts any --max-new-tokens here (at least 300
// numbers), so constrained requests run as long as the others.
constexpr const char* kArraySchema =
    R"({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 999}, "minItems": 300})";

// Whether request `index` is in the evenly spread `share` of all requests:
// when floor((i + 1) * share) moves past floor(i * share).
bool in_share(int index, double share) { return std::floor((index + 1) * share) > std::floor(index * share); }

struct RunResult {
  EngineStats stats;
  double seconds = 0;
  int64_t tokens = 0;
  int64_t involuntary_switches = 0;  // all threads of this process, engine start to end
};

int64_t involuntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_nivcsw;
}

double load_average_1m() {
  double load = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  return load;
}

Request make_request(int index, int max_new, const Workload& load, const StructuredOutput& schema,
                     const std::shared_ptr<EventSink>& sink) {
  Request r;
  r.prompt_ids = {1, static_cast<int32_t>(3 + index % 200), 4, 5};
  r.max_new_tokens = max_new;
  r.sampling.temperature = 0.0f;
  if (in_share(index, load.sampled)) {
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.95f;
    r.sampling.repetition_penalty = 1.1f;
    r.sampling.presence_penalty = 0.3f;
    r.sampling.frequency_penalty = 0.3f;
    r.sampling.has_seed = true;
    r.sampling.seed = static_cast<uint64_t>(index);
  }
  if (in_share(index, load.constrained)) r.structured_output = schema;
  r.ignore_eos = true;
  r.sink = sink;
  return r;
}

StatusOr<RunResult> run_once(const std::string& model, const WeightFormat& format, const Workload& load, int threads,
                             CachePolicy policy, bool overlap, bool stats_region, const std::string& kv_events) {
  EngineConfig config;
  config.model = model;
  config.weight_format = format;
  config.num_threads = threads;
  config.max_num_seqs = load.num_seqs;
  config.max_num_batched_tokens = std::max(512, load.num_seqs);
  config.cache_policy = policy;
  config.overlap_scheduling = overlap;
  config.kv_cache_bytes = load.kv_cache_bytes;
  config.compaction_bytes_per_step = load.compaction_bytes_per_step;
  config.kv_populate = load.kv_populate;
  config.kv_events_endpoint = kv_events;
  // Declared before the engine so that it outlives the engine thread's writes.
  std::vector<uint64_t> region(stats_region ? ZL_STATS_REGION_BYTES / sizeof(uint64_t) : 0);
  ZL_ASSIGN_OR_RETURN(auto engine, Engine::create(config));
  const int64_t switches_before = involuntary_switches();
  if (stats_region) ZL_RETURN_IF_ERROR(engine->attach_stats_region(region.data(), region.size() * sizeof(uint64_t)));
  const uint32_t total = static_cast<uint32_t>(load.num_seqs * (load.closed ? load.rounds : 1));
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> length(std::max(1, load.max_new / 2), load.max_new * 3 / 2);
  std::atomic<uint32_t> finished{0};
  auto sink = std::make_shared<CountingSink>(&finished, total, load.closed);
  StructuredOutput schema;  // compiled once, as serve compiles a request's once for its n choices
  if (load.constrained > 0) {
    schema.kind = StructuredOutput::Kind::kJsonSchema;
    schema.spec = kArraySchema;
    ZL_RETURN_IF_ERROR(engine->compile_grammar(schema));
  }
  uint32_t submitted = 0;
  auto submit_next = [&]() -> Status {
    const int max_new = load.closed ? length(rng) : load.max_new;
    ZL_RETURN_IF_ERROR(engine->submit(make_request(static_cast<int>(submitted), max_new, load, schema, sink)).status());
    ++submitted;
    return Status();
  };
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < load.num_seqs; ++i) ZL_RETURN_IF_ERROR(submit_next());
  for (uint32_t done = finished.load(); done != total; done = finished.load()) {
    while (submitted < total && submitted - done < static_cast<uint32_t>(load.num_seqs)) ZL_RETURN_IF_ERROR(submit_next());
    futex_wait(&finished, done);
  }
  RunResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.stats = engine->stats();
  result.tokens = result.stats.generation_tokens_total;
  result.involuntary_switches = involuntary_switches() - switches_before;
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace
}  // namespace zl

int main(int argc, char** argv) {
  CLI::App app{"zerolayer engine benchmarks: scheduling gap and decode throughput"};
  std::string mode = "gap", model, policy_name = "contiguous", dtype = "auto";
  std::vector<int> seqs;
  std::string arrival = "burst";
  int runs = 3, max_new = 200, threads = 0, rounds = 4;
  zl::Workload defaults;
  int64_t kv_cache_bytes = defaults.kv_cache_bytes, compaction_bytes = defaults.compaction_bytes_per_step;
  double sampled = 0.0, constrained = 0.0;
  app.add_option("--mode", mode, "gap or throughput")->check(CLI::IsMember({"gap", "throughput"}));
  app.add_option("--model", model, "Model (default: dummy:tiny for gap, dummy:llama-110m for throughput)");
  app.add_option("--dtype", dtype, "Weight matrices converted at load as serve --dtype: auto, f32, f16 or bf16")
      ->capture_default_str();
  app.add_option("--seqs", seqs, "Concurrent sequences, e.g. 1,16,64,256")->delimiter(',');
  app.add_option("--runs", runs, "Runs per configuration")->capture_default_str();
  app.add_option("--max-new-tokens", max_new, "Tokens each sequence generates")->capture_default_str();
  app.add_option("--arrival", arrival,
                 "burst: all sequences submitted at once, of equal length; closed: that many kept in flight, "
                 "each finish replaced, lengths spread around --max-new-tokens")
      ->check(CLI::IsMember({"burst", "closed"}))
      ->capture_default_str();
  app.add_option("--rounds", rounds, "closed: requests in all, in multiples of --seqs")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "Compute threads (0: one per core)");
  app.add_option("--sampled", sampled, "Share of requests that sample (temperature 0.8, top-p 0.95, penalties)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--constrained", constrained,
                 "Share of requests under a JSON schema (structured output; an array of 300+ integers)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--cache-policy", policy_name, "contiguous, paged or hybrid")->capture_default_str();
  app.add_option("--kv-cache-memory", kv_cache_bytes, "KV pool bytes")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--compaction-bytes-per-step", compaction_bytes,
                 "KV bytes compaction copies a step at most (0: each compaction at once)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  bool kv_populate = false;
  app.add_flag("--kv-populate", kv_populate,
               "Commit the KV pool's memory at start, as serve does by default (else a block's first write faults "
               "it in, inside the step: compaction copies onto fresh blocks pay for that)");
  bool stats_region = false;
  std::string overlap = "on";
  app.add_option("--overlap", overlap, "Overlap scheduling (EngineConfig::overlap_scheduling; CPU)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_flag("--stats-region", stats_region, "Publish into a stats region as serve does (zerolayer/stats_protocol.h)");
  std::string kv_events;
  app.add_option("--kv-events", kv_events,
                 "Publish KV-cache events as serve --kv-events-endpoint does, on this ZMQ endpoint "
                 "(tcp://127.0.0.1:* picks a free port); with no subscriber they are encoded and dropped");
  CLI11_PARSE(app, argc, argv);
  if (model.empty()) model = mode == "gap" ? "dummy:tiny" : "dummy:llama-110m";
  if (seqs.empty()) seqs = mode == "gap" ? std::vector<int>{1, 16, 64, 256} : std::vector<int>{1, 8, 32, 64};
  auto policy = zl::parse_cache_policy(policy_name);
  if (!policy.ok()) {
    std::fprintf(stderr, "error: %s\n", policy.status().message().c_str());
    return 1;
  }
  zl::WeightFormat format;
  if (zl::Status s = zl::parse_dtype_flag(dtype, format); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  setenv("ZEROLAYER_LOG_LEVEL", "warn", 0);
  for (int n : seqs) {
    std::vector<double> p50, p99, max, tps, batch, switches, itl_p99, itl_max, copy_max;
    int64_t compactions = 0, block_moves = 0, drains = 0;
    int32_t max_block_moves = 0;
    for (int r = 0; r < runs; ++r) {
      const zl::Workload load{arrival == "closed", kv_cache_bytes, compaction_bytes, kv_populate, n, max_new, rounds,
                              sampled, constrained};
      auto result = zl::run_once(model, format, load, threads, *policy, overlap == "on", stats_region, kv_events);
      if (!result.ok()) {
        std::fprintf(stderr, "error: %s\n", result.status().message().c_str());
        return 1;
      }
      p50.push_back(result->stats.sched_gap_p50_us);
      p99.push_back(result->stats.sched_gap_p99_us);
      max.push_back(result->stats.sched_gap_max_us);
      tps.push_back(static_cast<double>(result->tokens) / result->seconds);
      batch.push_back(result->stats.batch_size_mean);
      switches.push_back(static_cast<double>(result->involuntary_switches) / result->seconds);
      const zl::EngineStats& s = result->stats;
      itl_p99.push_back(static_cast<double>(s.inter_token_ns.quantile(0.99)) / 1e6);
      itl_max.push_back(static_cast<double>(s.inter_token_ns.max()) / 1e6);
      compactions += s.kv.num_compactions;
      block_moves += s.kv.num_block_moves;
      drains += s.num_drains;
      max_block_moves = std::max(max_block_moves, s.kv.max_block_moves);
      copy_max.push_back(static_cast<double>(s.compaction_copy_ns_max) / 1e6);
    }
    std::printf(
        "{\"bench\":\"engine_%s\",\"arrival\":\"%s\",\"model\":\"%s\",\"dtype\":\"%s\",\"policy\":\"%s\",\"overlap\":\"%s\",\"sampled\":%.2f,\"constrained\":%.2f,"
        "\"stats_region\":%s,\"kv_events\":%s,\"seqs\":%d,\"runs\":%d,"
        "\"sched_gap_p50_us\":{\"min\":%.2f,\"median\":%.2f},\"sched_gap_p99_us\":{\"min\":%.2f,\"median\":%.2f},"
        "\"sched_gap_max_us\":{\"min\":%.1f,\"median\":%.1f},\"tokens_per_s\":{\"max\":%.1f,\"median\":%.1f},"
        "\"mean_batch\":%.1f,\"involuntary_switches_per_s\":%.0f,\"load_1m\":%.2f,"
        "\"kv_cache_bytes\":%lld,\"kv_populate\":%s,\"compaction_bytes_per_step\":%lld,\"compactions\":%lld,"
        "\"block_moves\":%lld,"
        "\"max_block_moves\":%d,\"drains\":%lld,\"copy_max_ms\":{\"min\":%.2f,\"median\":%.2f},\"itl_p99_ms\":{\"min\":%.2f,\"median\":%.2f},"
        "\"itl_max_ms\":{\"min\":%.2f,\"median\":%.2f}}\n",
        mode.c_str(), arrival.c_str(), model.c_str(), dtype.c_str(), policy_name.c_str(), overlap.c_str(), sampled, constrained,
        stats_region ? "true" : "false", kv_events.empty() ? "false" : "true", n, runs, *std::min_element(p50.begin(), p50.end()),
        zl::median(p50), *std::min_element(p99.begin(), p99.end()), zl::median(p99),
        *std::min_element(max.begin(), max.end()), zl::median(max), *std::max_element(tps.begin(), tps.end()),
        zl::median(tps), zl::median(batch), zl::median(switches), zl::load_average_1m(),
        static_cast<long long>(kv_cache_bytes), kv_populate ? "true" : "false", static_cast<long long>(compaction_bytes),
        static_cast<long long>(compactions),
        static_cast<long long>(block_moves), max_block_moves, static_cast<long long>(drains),
        *std::min_element(copy_max.begin(), copy_max.end()), zl::median(copy_max),
        *std::min_element(itl_p99.begin(), itl_p99.end()), zl::median(itl_p99),
        *std::min_element(itl_max.begin(), itl_max.end()), zl::median(itl_max));
    std::fflush(stdout);
  }
  return 0;
}
