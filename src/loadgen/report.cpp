#include "loadgen/report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace zl::loadgen {
namespace {

using json = nlohmann::json;

std::string pct_name(double p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", p);
  return std::string("p") + buf;
}

void put_distribution(json& j, const std::string& metric, const Distribution& d) {
  j["mean_" + metric + "_ms"] = d.mean_ms;
  j["median_" + metric + "_ms"] = d.median_ms;
  j["std_" + metric + "_ms"] = d.std_ms;
  for (const auto& [p, v] : d.percentiles_ms) j[pct_name(p) + "_" + metric + "_ms"] = v;
}

std::string fmt(double v, const char* spec = "%.1f") {
  char buf[64];
  std::snprintf(buf, sizeof(buf), spec, v);
  return buf;
}

std::string rate_name(double rate) { return std::isinf(rate) ? "inf" : fmt(rate, "%g"); }

}  // namespace

json pass_json(const PassInfo& pass) {
  const RunSummary& s = pass.summary;
  json j{{"request_rate", std::isinf(pass.request_rate) ? json("inf") : json(pass.request_rate)},
         {"max_concurrency", pass.max_concurrency > 0 ? json(pass.max_concurrency) : json(nullptr)},
         {"num_workers", pass.num_workers},
         {"duration", s.duration_s},
         {"completed", s.completed},
         {"failed", s.failed},
         {"total_input_tokens", s.total_input_tokens},
         {"total_output_tokens", s.total_output_tokens},
         {"request_throughput", s.request_throughput},
         {"request_goodput", s.request_goodput},
         {"output_throughput", s.output_throughput},
         {"total_token_throughput", s.total_token_throughput},
         {"errors", s.first_errors}};
  put_distribution(j, "ttft", s.ttft);
  put_distribution(j, "tpot", s.tpot);
  put_distribution(j, "itl", s.itl);
  put_distribution(j, "e2el", s.e2el);
  j["queued_fraction"] = s.queued_fraction ? json(*s.queued_fraction) : json(nullptr);
  if (s.queue) put_distribution(j, "queue", *s.queue);
  return j;
}

json detail_json(const std::vector<RequestResult>& results, int64_t start_unix_ns) {
  json d{{"start_unix_ns", start_unix_ns}};
  for (const char* key : {"start_times", "input_lens", "output_lens", "ttfts", "e2els", "itls", "errors"})
    d[key] = json::array();
  for (const RequestResult& r : results) {
    d["start_times"].push_back(r.start_s);
    d["input_lens"].push_back(r.prompt_tokens);
    d["output_lens"].push_back(r.output_tokens);
    d["ttfts"].push_back(r.ttft_s);
    d["e2els"].push_back(r.e2e_s);
    d["itls"].push_back(r.itl_s);
    d["errors"].push_back(r.error);
  }
  return d;
}

std::string markdown_table(const std::vector<PassInfo>& passes, const std::vector<double>& percentiles) {
  std::ostringstream os;
  os << "| rate (req/s) | concurrency | done | failed | req/s | out tok/s | goodput (req/s) |";
  std::ostringstream rule;
  rule << "|---|---|---|---|---|---|---|";
  for (const char* metric : {"TTFT", "TPOT", "ITL", "E2E"}) {
    os << " " << metric << " mean |";
    rule << "---|";
    for (double p : percentiles) {
      os << " " << metric << " " << pct_name(p) << " |";
      rule << "---|";
    }
  }
  os << " queued |\n" << rule.str() << "---|\n";
  for (const PassInfo& pass : passes) {
    const RunSummary& s = pass.summary;
    os << "| " << rate_name(pass.request_rate) << " | "
       << (pass.max_concurrency > 0 ? std::to_string(pass.max_concurrency) : "-") << " | " << s.completed << " | "
       << s.failed << " | " << fmt(s.request_throughput, "%.2f") << " | " << fmt(s.output_throughput) << " | "
       << fmt(s.request_goodput, "%.2f") << " |";
    for (const Distribution* d : {&s.ttft, &s.tpot, &s.itl, &s.e2el}) {
      os << " " << fmt(d->mean_ms) << " |";
      for (const auto& pv : d->percentiles_ms) os << " " << fmt(pv.second) << " |";
    }
    os << " " << (s.queued_fraction ? fmt(*s.queued_fraction * 100, "%.0f%%") : std::string("n/a")) << " |\n";
  }
  os << "\nLatencies in ms. queued: requests whose server-reported queue time passed the threshold "
        "(n/a: the server reports none).\n";
  return os.str();
}

}  // namespace zl::loadgen
