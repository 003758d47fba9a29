// zerolayer bench: a load generator for any OpenAI-compatible server
// (--base-url) or zerolayer's shared-memory transport (--shm-name). For each
// --request-rate it sends --num-prompts streamed, greedy, ignore_eos
// completions with Poisson arrivals (optionally capped at --max-concurrency
// in flight) and reports TTFT, TPOT, ITL and E2E as `vllm bench serve`
// defines them, throughput, goodput and the share of requests that queued.
// The workload comes from src/loadgen/workload.h; measuring from src/loadgen/.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>

#include "commands.h"
#include "common.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"
#include "loadgen/target.h"

namespace zl::cli {
namespace {

using json = nlohmann::json;
using namespace zl::loadgen;

constexpr const char* kDescription = R"(Benchmark a serving endpoint under load.

Targets: --base-url http://HOST:PORT (any OpenAI-compatible server; streamed
POST /v1/completions with max_tokens, temperature 0, ignore_eos and
stream_options.include_usage) or --shm-name NAME (zerolayer's shared memory).

Each --request-rate R (requests/s, "inf" = all at once) is one pass of
--num-prompts requests with exponential gaps (a Poisson process); with
--max-concurrency N at most N are in flight and a due request waits for a
free slot. Prompt and output lengths are uniform in LEN*[1-r, 1+r] for
--random-range-ratio r; prompts are random token ids (--prompt-kind tokens,
ids from --token-id-range) or random made-up words (--prompt-kind words, one
word per unit of length; the server's count is reported). --prefix-len P puts
the same P units in front of every prompt. Pass i draws its prompts with seed
--seed + i, so no pass finds the previous one's prompts in a prefix cache.

Metrics (as vllm bench serve): TTFT = send to first streamed chunk; ITL =
gaps between chunks; TPOT = (E2E - TTFT) / (output tokens - 1); E2E = send to
end of stream; token counts from the server's usage. Goodput: completed
requests per second that met every --goodput SLO. "queued": the share of
requests whose server-reported queue time (timings.queue_ms over HTTP, the
FINISH record over shm) exceeds --queue-threshold-ms; a request that arrives
during a forward pass waits for it to end, so set the threshold near one step
to count only waits for capacity. n/a when the server reports no queue time.

Output: a markdown table on stdout, JSON with --result-file (plot it with
bench/plot_bench.py), a progress bar on stderr when it is a terminal.

Example:
  zerolayer bench --base-url http://127.0.0.1:8000 --request-rate 1,2,4,inf \
      --num-prompts 50 --random-input-len 256 --random-output-len 64 \
      --goodput ttft:500 tpot:50 --result-file bench.json)";

struct BenchFlags {
  HttpTargetConfig http;
  std::string shm_name;
  int shm_max_clients = 48;
  WorkloadConfig workload;
  std::string prompt_kind = "tokens";
  std::string token_id_range = "3:256";
  std::vector<std::string> request_rates{"inf"};
  int max_concurrency = 0;
  std::vector<std::string> goodput;
  std::vector<double> percentiles{50, 95, 99};
  double queue_threshold_ms = 1.0;
  int num_warmups = 1;
  std::string result_file;
  bool save_detailed = false;
  std::string label;
};

void add_flags(CLI::App& cmd, BenchFlags& f) {
  cmd.add_option("--base-url", f.http.base_url, "An OpenAI-compatible server, e.g. http://127.0.0.1:8000");
  cmd.add_option("--endpoint", f.http.endpoint, "The completions path under --base-url")->capture_default_str();
  cmd.add_option("--api-key", f.http.api_key, "Sent as Authorization: Bearer KEY")->envname("ZEROLAYER_API_KEY");
  cmd.add_option("--model", f.http.model, "The model field (default: the first of GET /v1/models)");
  cmd.add_option("--shm-name", f.shm_name, "Benchmark zerolayer's shared-memory transport of this name instead");
  cmd.add_option("--shm-max-clients", f.shm_max_clients,
                 "Client slots to claim at most (one request in flight each; the server has 64 by default)")
      ->capture_default_str();
  cmd.add_option("--num-prompts", f.workload.num_prompts, "Requests per pass")->capture_default_str();
  cmd.add_option("--request-rate", f.request_rates, "Requests/s, one pass each: e.g. 1,2,4,inf")
      ->delimiter(',')
      ->capture_default_str();
  cmd.add_option("--max-concurrency", f.max_concurrency, "Most requests in flight (0: no limit)")
      ->capture_default_str();
  cmd.add_option("--random-input-len", f.workload.input_len, "Prompt length (tokens or words), prefix excluded")
      ->capture_default_str();
  cmd.add_option("--random-output-len", f.workload.output_len, "Tokens to generate (exact: ignore_eos)")
      ->capture_default_str();
  cmd.add_option("--random-range-ratio", f.workload.range_ratio, "Lengths uniform in LEN*[1-r, 1+r]")
      ->capture_default_str();
  cmd.add_option("--prefix-len", f.workload.prefix_len, "A prefix shared by every prompt")->capture_default_str();
  cmd.add_option("--prompt-kind", f.prompt_kind, "tokens (random ids) or words (random text)")
      ->check(CLI::IsMember({"tokens", "words"}))
      ->capture_default_str();
  cmd.add_option("--token-id-range", f.token_id_range, "LO:HI, random prompt ids in [LO, HI)")
      ->capture_default_str();
  cmd.add_option("--seed", f.workload.seed, "Seeds prompts and arrival times")->capture_default_str();
  cmd.add_option("--goodput", f.goodput, "SLOs in ms: ttft:MS tpot:MS e2el:MS (any subset)");
  cmd.add_option("--percentiles", f.percentiles, "Percentiles to report")->delimiter(',')->capture_default_str();
  cmd.add_option("--queue-threshold-ms", f.queue_threshold_ms, "Queue time above which a request counts as queued")
      ->capture_default_str();
  cmd.add_option("--num-warmups", f.num_warmups, "Untimed requests before the first pass")->capture_default_str();
  cmd.add_option("--result-file", f.result_file, "Write the results as JSON here");
  cmd.add_flag("--save-detailed", f.save_detailed,
               "Add each request's lengths, TTFT, ITLs, E2E and start time to --result-file");
  cmd.add_option("--label", f.label, "A name for this target in the JSON (e.g. the engine)");
}

void show_progress(int done, int total) {
  if (!isatty(STDERR_FILENO)) return;
  constexpr int kWidth = 30;
  int filled = total > 0 ? done * kWidth / total : kWidth;
  std::fprintf(stderr, "\r  [%.*s%*s] %d/%d requests", filled, "##############################", kWidth - filled, "",
               done, total);
  if (done == total) std::fprintf(stderr, "\n");
}

// This process's argv, space-joined, for the result file.
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg, line;
  while (std::getline(in, arg, '\0')) line += (line.empty() ? "" : " ") + arg;
  return line;
}

StatusOr<double> parse_rate(const std::string& text) {
  if (text == "inf") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  double rate = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(rate > 0) || !std::isfinite(rate))
    return invalid_argument("--request-rate '", text, "': expected a positive number or inf");
  return rate;
}

Status check_flags(BenchFlags& f, Slo* slo, std::vector<double>* rates) {
  if (f.http.base_url.empty() == f.shm_name.empty())
    return invalid_argument("give exactly one of --base-url and --shm-name");
  int lo = 0, hi = 0;
  char tail = 0;
  if (std::sscanf(f.token_id_range.c_str(), "%d:%d%c", &lo, &hi, &tail) != 2)
    return invalid_argument("--token-id-range '", f.token_id_range, "': expected LO:HI");
  f.workload.token_id_min = lo;
  f.workload.token_id_max = hi;
  f.workload.prompt_kind = f.prompt_kind == "words" ? PromptKind::kWords : PromptKind::kTokens;
  if (std::string e = validate(f.workload); !e.empty()) return invalid_argument(e);
  if (f.max_concurrency < 0) return invalid_argument("--max-concurrency must not be negative");
  std::string error;
  if (!parse_slo(f.goodput, slo, &error)) return invalid_argument(error);
  for (const std::string& text : f.request_rates) {
    ZL_ASSIGN_OR_RETURN(double rate, parse_rate(text));
    rates->push_back(rate);
  }
  return ok_status();
}

json header_json(const BenchFlags& f, const std::string& model, const std::string& command) {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const WorkloadConfig& w = f.workload;
  return json{{"date", date},
              {"label", f.label},
              {"command", command},
              {"backend", f.shm_name.empty() ? "openai-completions" : "zerolayer-shm"},
              {"base_url", f.http.base_url},
              {"shm_name", f.shm_name},
              {"model", model},
              {"num_prompts", w.num_prompts},
              {"random_input_len", w.input_len},
              {"random_output_len", w.output_len},
              {"random_range_ratio", w.range_ratio},
              {"prefix_len", w.prefix_len},
              {"prompt_kind", f.prompt_kind},
              {"seed", w.seed},
              {"goodput", f.goodput},
              {"queue_threshold_ms", f.queue_threshold_ms}};
}

int run_bench(BenchFlags& f, const std::string& command) {
  Slo slo;
  std::vector<double> rates;
  if (Status s = check_flags(f, &slo, &rates); !s.ok()) return report_error(s);
  std::string model = "shm";
  auto target = f.shm_name.empty() ? make_http_target(f.http, &model) : make_shm_target(f.shm_name, f.shm_max_clients);
  if (!target.ok()) return report_error(target.status());
  // Warm-up prompts come from a seed no pass uses.
  WorkloadConfig warm = f.workload;
  warm.num_prompts = std::max(1, f.num_warmups);
  warm.seed = ~f.workload.seed;
  if (f.num_warmups > 0) {
    auto out = run_pass(**target, make_requests(warm), std::vector<double>(warm.num_prompts, 0.0), 1,
                        [](int, int) {});
    if (!out.ok()) return report_error(out.status());
    for (const RequestResult& r : out->results)
      if (!r.success) return report_error(invalid_argument("the warm-up request failed: ", r.error));
  }
  std::vector<PassInfo> passes;
  json runs = json::array();
  for (size_t i = 0; i < rates.size(); ++i) {
    WorkloadConfig w = f.workload;
    w.seed = f.workload.seed + i;
    std::vector<BenchRequest> requests = make_requests(w);
    std::fprintf(stderr, "pass %zu/%zu: rate %g req/s, %d prompts\n", i + 1, rates.size(), rates[i], w.num_prompts);
    auto out = run_pass(**target, requests, poisson_arrivals(w.num_prompts, rates[i], w.seed), f.max_concurrency,
                        show_progress);
    if (!out.ok()) return report_error(out.status());
    PassInfo pass{rates[i], f.max_concurrency, out->num_workers,
                  summarize_run(out->results, out->duration_s, slo, f.percentiles, f.queue_threshold_ms)};
    runs.push_back(pass_json(pass));
    if (f.save_detailed) runs.back().update(detail_json(out->results, out->start_unix_ns));
    passes.push_back(std::move(pass));
  }
  std::printf("%s", markdown_table(passes, f.percentiles).c_str());
  if (!f.result_file.empty()) {
    json result = header_json(f, model, command);
    result["runs"] = runs;
    std::ofstream out(f.result_file);
    out << result.dump(2) << "\n";
    if (!out) return report_error(invalid_argument("--result-file ", f.result_file, ": cannot write"));
  }
  int failed = 0;
  for (const PassInfo& p : passes) failed += p.summary.failed;
  for (const PassInfo& p : passes)
    for (const std::string& e : p.summary.first_errors) std::fprintf(stderr, "failed request: %s\n", e.c_str());
  return failed > 0 ? 1 : 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Benchmark a server under load (HTTP or shared memory)");
  cmd->footer(kDescription);
  auto flags = std::make_shared<BenchFlags>();
  add_flags(*cmd, *flags);
  return [flags]() -> int { return run_bench(*flags, own_command_line()); };
}

}  // namespace zl::cli
