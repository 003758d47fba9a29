// Runs one benchmark pass: requests go out at their arrival times to a pool
// of worker threads, one Session each. With max_concurrency > 0 at most that
// many are in flight and a due request waits for a free worker (vLLM's
// semaphore); its TTFT counts from when it is actually sent.
#pragma once

#include <functional>
#include <vector>

#include "loadgen/bench_stats.h"
#include "loadgen/target.h"
#include "loadgen/workload.h"
#include "zerolayer/status.h"

namespace zl::loadgen {

struct RunOutcome {
  std::vector<RequestResult> results;  // in request order
  double duration_s = 0;               // first arrival slot to the last completion
  int num_workers = 0;
  int64_t start_unix_ns = 0;           // the pass's start, wall clock (to line up with other tools' logs)
};

// `progress(done, total)` is called from the calling thread about every 100 ms and once at the end.
StatusOr<RunOutcome> run_pass(Target& target, const std::vector<BenchRequest>& requests,
                              const std::vector<double>& arrivals_s, int max_concurrency,
                              const std::function<void(int, int)>& progress);

}  // namespace zl::loadgen
