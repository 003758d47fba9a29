// Benchmark output: the JSON result file (one object per pass under "runs",
// keys named as in `vllm bench serve --save-result`, e.g. "p95_ttft_ms") and
// the markdown table printed on stdout (one row per pass).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "loadgen/bench_stats.h"

namespace zl::loadgen {

struct PassInfo {
  double request_rate = 0;   // requests/s; infinity: all at once
  int max_concurrency = 0;   // 0: unlimited
  int num_workers = 0;
  RunSummary summary;
};

nlohmann::json pass_json(const PassInfo& pass);
// Per request, in request order, as `vllm bench serve --save-detailed`
// ("input_lens", "output_lens", "ttfts", "itls", "errors"; seconds), plus
// "e2els", "start_times" (seconds from the pass's start) and "start_unix_ns".
nlohmann::json detail_json(const std::vector<RequestResult>& results, int64_t start_unix_ns);
// A markdown table of the passes with the given percentiles of TTFT, TPOT, ITL and E2E.
std::string markdown_table(const std::vector<PassInfo>& passes, const std::vector<double>& percentiles);

}  // namespace zl::loadgen
