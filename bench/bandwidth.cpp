// Measures this machine's read bandwidth: a ThreadPool of --threads threads
// (default: one per core, the caller included, as the model's) streams a --mib
// buffer (default 1 GiB, far beyond the caches), --runs times after one
// warm-up sweep. Prints one JSON object:
//   {"bench":"bandwidth","threads":2,"bytes":...,"runs":10,"gbs_min":..,"gbs_median":..,"gbs_max":..}
// Usage: bandwidth [--threads N] [--mib M] [--runs R]
#include <CLI/CLI.hpp>

#include <cstdio>

#include "bandwidth_probe.h"
#include "core/thread_pool.h"

int main(int argc, char** argv) {
  CLI::App app{"Streaming read bandwidth of this machine, as JSON"};
  int threads = zl::default_num_threads(), mib = 1024, runs = 10;
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--mib", mib)->check(CLI::Range(64, 1 << 20));
  app.add_option("--runs", runs)->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  zl::ThreadPool pool(threads);
  zl::bench::BandwidthProbe probe(pool, size_t(mib) << 20);
  if (!probe.ok()) {
    std::fprintf(stderr, "error: cannot map %d MiB\n", mib);
    return 1;
  }
  probe.sweep_gbs();
  std::vector<double> gbs;
  for (int r = 0; r < runs; ++r) gbs.push_back(probe.sweep_gbs());
  zl::bench::Summary s = zl::bench::summarize(gbs);
  std::printf("{\"bench\":\"bandwidth\",\"threads\":%d,\"bytes\":%zu,\"runs\":%d,\"gbs_min\":%.2f,"
              "\"gbs_median\":%.2f,\"gbs_max\":%.2f}\n",
              threads, size_t(mib) << 20, runs, s.min, s.median, s.max);
  return 0;
}
