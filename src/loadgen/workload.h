// The requests a benchmark sends and when: prompts of random token ids or
// random words with lengths drawn as `vllm bench serve --dataset-name random`
// does (uniform in [len * (1 - ratio), len * (1 + ratio)]), an optional
// prefix shared by every prompt, and arrival times from a Poisson process.
// Everything is a function of the seed, so two runs send the same workload.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zl::loadgen {

enum class PromptKind { kTokens, kWords };

struct WorkloadConfig {
  int32_t num_prompts = 100;
  int32_t input_len = 128;        // tokens (kTokens) or words (kWords), prefix excluded
  int32_t output_len = 64;        // max_tokens; with ignore_eos the exact output length
  double range_ratio = 0.0;       // [0, 1): lengths uniform in len * [1 - r, 1 + r]
  int32_t prefix_len = 0;         // shared by every prompt, same unit as input_len
  PromptKind prompt_kind = PromptKind::kTokens;
  int32_t token_id_min = 3;       // random ids are drawn from [min, max)
  int32_t token_id_max = 256;
  uint64_t seed = 0;
};

struct BenchRequest {
  std::vector<int32_t> prompt_ids;  // kTokens
  std::string prompt_text;          // kWords
  int32_t prompt_len = 0;           // in the workload's unit (ids or words), prefix included
  int32_t output_len = 0;
};

// Checks ranges; returns "" or a message naming the flag.
std::string validate(const WorkloadConfig& config);
std::vector<BenchRequest> make_requests(const WorkloadConfig& config);

// Send times in seconds from the start for n requests at `rate` requests/s
// (exponential gaps, i.e. a Poisson process, first gap included, as vLLM);
// rate = infinity sends all at 0.
std::vector<double> poisson_arrivals(int32_t n, double rate, uint64_t seed);

}  // namespace zl::loadgen
