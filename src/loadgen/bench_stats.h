// What one benchmark run measured, reduced with the definitions of
// `vllm bench serve` so that numbers from both tools mean the same thing:
//   TTFT  send -> first streamed chunk carrying a choice
//   ITL   gaps between consecutive such chunks (per chunk, not per token)
//   TPOT  (E2E - TTFT) / (output_tokens - 1), only requests with > 1 token
//   E2E   send -> end of the stream
// Percentiles interpolate linearly between order statistics (numpy's
// default). Throughputs divide by the run's wall time (first send to last
// completion). Goodput counts the completed requests that met every given SLO.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zl::loadgen {

struct RequestResult {
  bool success = false;
  std::string error;              // why it failed (status line, error body, transport error)
  int32_t prompt_tokens = 0;      // as the server counted them (usage), else as sent
  int32_t output_tokens = 0;      // as the server counted them (usage), else chunks received
  double ttft_s = 0;
  double e2e_s = 0;
  std::vector<double> itl_s;      // one gap per chunk after the first
  std::optional<double> queue_s;  // the server's own queue time, when it reports one
  double start_s = 0;             // when its worker took it, from the pass's start
};

// Percentile p in [0, 100] of `values` with linear interpolation between
// order statistics (numpy.percentile's default); 0 for an empty set.
double percentile(std::vector<double> values, double p);

struct Distribution {
  double mean_ms = 0, median_ms = 0, std_ms = 0;
  std::vector<std::pair<double, double>> percentiles_ms;  // (p, value)
};
Distribution summarize_seconds(const std::vector<double>& seconds, const std::vector<double>& percentiles);

// Service-level objectives for goodput, in ms; unset ones are not checked.
struct Slo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
};
// Parses "ttft:MS tpot:MS e2el:MS" items (any subset); names the bad item.
bool parse_slo(const std::vector<std::string>& items, Slo* slo, std::string* error);

struct RunSummary {
  double duration_s = 0;
  int32_t completed = 0;
  int32_t failed = 0;
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double request_throughput = 0;      // completed / s
  double request_goodput = 0;         // completed within every SLO / s (0 when no SLO given)
  double output_throughput = 0;       // output tokens / s
  double total_token_throughput = 0;  // (input + output) tokens / s
  Distribution ttft, tpot, itl, e2el;
  // Requests whose server-reported queue time exceeded the threshold, over
  // the completed requests that reported one; empty when none did.
  std::optional<double> queued_fraction;
  std::optional<Distribution> queue;
  std::vector<std::string> first_errors;  // up to 5 distinct failure messages
};

RunSummary summarize_run(const std::vector<RequestResult>& results, double duration_s, const Slo& slo,
                         const std::vector<double>& percentiles, double queue_threshold_ms);

}  // namespace zl::loadgen
