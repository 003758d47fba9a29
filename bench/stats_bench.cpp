// What the stats region costs the engine loop, per operation, one JSON line
// each (min and median of --runs repetitions):
//   step_record_ns     RequestLog::on_step: the step's end time kept for the
//                      requests' decode steps (once per step, whatever the batch)
//   histogram_section_ns  one histogram section written under its seqlock
//                      (the largest piece a publishing step writes)
//   build/bench/stats_bench --runs 9
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "engine/request_log.h"
#include "engine/stats_publisher.h"

namespace zl {
namespace {

using Clock = std::chrono::steady_clock;

// The engine's per-step bookkeeping for decode steps: one store per step.
double step_record_ns(int num_steps) {
  auto log = std::make_unique<RequestLog>();
  Clock::time_point now = Clock::now();
  auto start = Clock::now();
  for (int step = 0; step < num_steps; ++step) log->on_step(now += std::chrono::microseconds(20));
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  if (log->num_steps() != uint64_t(num_steps)) std::abort();
  return ns / num_steps;
}

double histogram_section_ns(int repetitions) {
  Histogram h;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) h.record(rng() % 10000000);  // 0-10 ms: many buckets in use
  auto section = std::make_unique<zl_stats_histogram>();
  auto start = Clock::now();
  for (int i = 0; i < repetitions; ++i) write_histogram_section(*section, h, i);
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  if (section->count != h.count()) std::abort();
  return ns / repetitions;
}

void print(const char* name, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("{\"bench\":\"stats_%s\",\"runs\":%zu,\"min\":%.2f,\"median\":%.2f}\n", name, v.size(), v.front(),
              v[v.size() / 2]);
}

}  // namespace
}  // namespace zl

int main(int argc, char** argv) {
  CLI::App app{"zerolayer stats region: cost per operation on the engine thread"};
  int runs = 9;
  app.add_option("--runs", runs, "Repetitions (min and median)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<double> step, section;
  for (int r = 0; r < runs; ++r) {
    step.push_back(zl::step_record_ns(100000));
    section.push_back(zl::histogram_section_ns(2000));
  }
  zl::print("step_record_ns", step);
  zl::print("histogram_section_ns", section);
  return 0;
}
