#include "loadgen/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace zl::loadgen {

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // numpy 'linear': rank = p/100 * (n - 1), interpolate between its neighbours.
  double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

Distribution summarize_seconds(const std::vector<double>& seconds, const std::vector<double>& percentiles) {
  Distribution d;
  std::vector<double> ms(seconds.size());
  std::transform(seconds.begin(), seconds.end(), ms.begin(), [](double s) { return s * 1e3; });
  if (!ms.empty()) {
    double n = static_cast<double>(ms.size());
    d.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / n;
    double sq = 0;
    for (double v : ms) sq += (v - d.mean_ms) * (v - d.mean_ms);
    d.std_ms = std::sqrt(sq / n);  // population std, as numpy.std
  }
  d.median_ms = percentile(ms, 50);
  for (double p : percentiles) d.percentiles_ms.emplace_back(p, percentile(ms, p));
  return d;
}

bool parse_slo(const std::vector<std::string>& items, Slo* slo, std::string* error) {
  for (const std::string& item : items) {
    size_t colon = item.find(':');
    std::string name = item.substr(0, colon);
    char* end = nullptr;
    double value = colon == std::string::npos ? NAN : std::strtod(item.c_str() + colon + 1, &end);
    if (colon == std::string::npos || end == item.c_str() + colon + 1 || *end != '\0' || !(value > 0)) {
      *error = "--goodput item '" + item + "': expected NAME:MS with a positive number of milliseconds";
      return false;
    }
    if (name == "ttft") slo->ttft_ms = value;
    else if (name == "tpot") slo->tpot_ms = value;
    else if (name == "e2el") slo->e2el_ms = value;
    else {
      *error = "--goodput item '" + item + "': unknown metric '" + name + "' (ttft, tpot or e2el)";
      return false;
    }
  }
  return true;
}

namespace {

double tpot_s(const RequestResult& r) {
  return r.output_tokens > 1 ? (r.e2e_s - r.ttft_s) / (r.output_tokens - 1) : 0.0;
}

bool meets(const RequestResult& r, const Slo& slo) {
  if (slo.ttft_ms && r.ttft_s * 1e3 > *slo.ttft_ms) return false;
  if (slo.tpot_ms && tpot_s(r) * 1e3 > *slo.tpot_ms) return false;
  if (slo.e2el_ms && r.e2e_s * 1e3 > *slo.e2el_ms) return false;
  return true;
}

}  // namespace

RunSummary summarize_run(const std::vector<RequestResult>& results, double duration_s, const Slo& slo,
                         const std::vector<double>& percentiles, double queue_threshold_ms) {
  RunSummary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2el, queue;
  int32_t good = 0, queued = 0;
  for (const RequestResult& r : results) {
    if (!r.success) {
      ++s.failed;
      if (s.first_errors.size() < 5 &&
          std::find(s.first_errors.begin(), s.first_errors.end(), r.error) == s.first_errors.end())
        s.first_errors.push_back(r.error);
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s);
    if (r.output_tokens > 1) tpot.push_back(tpot_s(r));
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    e2el.push_back(r.e2e_s);
    if (meets(r, slo)) ++good;
    if (r.queue_s) {
      queue.push_back(*r.queue_s);
      if (*r.queue_s * 1e3 > queue_threshold_ms) ++queued;
    }
  }
  if (duration_s > 0) {
    s.request_throughput = s.completed / duration_s;
    bool any_slo = slo.ttft_ms || slo.tpot_ms || slo.e2el_ms;
    s.request_goodput = any_slo ? good / duration_s : 0.0;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / duration_s;
    s.total_token_throughput = static_cast<double>(s.total_input_tokens + s.total_output_tokens) / duration_s;
  }
  s.ttft = summarize_seconds(ttft, percentiles);
  s.tpot = summarize_seconds(tpot, percentiles);
  s.itl = summarize_seconds(itl, percentiles);
  s.e2el = summarize_seconds(e2el, percentiles);
  if (!queue.empty()) {
    s.queued_fraction = static_cast<double>(queued) / static_cast<double>(queue.size());
    s.queue = summarize_seconds(queue, percentiles);
  }
  return s;
}

}  // namespace zl::loadgen
