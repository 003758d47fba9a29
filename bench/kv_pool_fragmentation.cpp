// Runs the synthetic workload of engine/kv_pool_workload.h under each cache
// policy and prints one JSON line per policy: fragmentation and reserved-
// ahead shares of the pool (mean over steps and max), preemptions and the
// prefix hit rate. No model, no GPU: it measures the block allocator alone.
//
//   kv_pool_fragmentation [--requests 10000] [--blocks 4096] [--block-size 16]
//                         [--min-len 16] [--max-len 1024] [--running 64] [--seed 1]
#include <CLI/CLI.hpp>

#include <cstdio>

#include "engine/kv_pool_workload.h"

int main(int argc, char** argv) {
  zl::KvWorkloadConfig config;
  CLI::App app("KV pool fragmentation under each cache policy");
  app.add_option("--requests", config.num_requests, "requests in the workload")->check(CLI::PositiveNumber);
  app.add_option("--blocks", config.num_blocks, "KV blocks in the pool")->check(CLI::PositiveNumber);
  app.add_option("--block-size", config.block_size, "tokens per block")->check(CLI::PositiveNumber);
  app.add_option("--min-len", config.min_len, "shortest prompt and max_new_tokens")->check(CLI::PositiveNumber);
  app.add_option("--max-len", config.max_len, "longest prompt and max_new_tokens")->check(CLI::PositiveNumber);
  app.add_option("--running", config.max_running, "most sequences running at once")->check(CLI::PositiveNumber);
  app.add_option("--seed", config.seed, "workload seed");
  CLI11_PARSE(app, argc, argv);
  if (config.min_len > config.max_len ||
      static_cast<int64_t>(config.num_blocks) * config.block_size < 2 * int64_t{config.max_len}) {
    std::fprintf(stderr, "error: --min-len must be <= --max-len, and the pool must hold 2 * --max-len tokens\n");
    return 2;
  }
  for (zl::CachePolicy policy :
       {zl::CachePolicy::kContiguous, zl::CachePolicy::kPaged, zl::CachePolicy::kHybrid}) {
    config.policy = policy;
    std::printf("%s\n", zl::kv_workload_json(zl::run_kv_workload(config)).c_str());
    std::fflush(stdout);
  }
  return 0;
}
