// Shared by the batch-invariance tests (CPU and GPU): random greedy requests,
// an engine made for them, a runner that submits a slice of them at once and
// returns each request's tokens once its single terminal event arrived, and
// the tests' parameter names.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "collecting_sink.h"
#include "zerolayer/engine.h"

namespace zl::test {

struct Case {
  std::vector<int32_t> prompt;
  int32_t max_new = 0;
};

// n requests: prompts of 1..max_prompt ids (bos first), 1..40 new tokens.
inline std::vector<Case> make_cases(int n, int32_t vocab, int max_prompt, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Case> cases;
  for (int i = 0; i < n; ++i) {
    Case c;
    int len = 1 + static_cast<int>(rng() % static_cast<uint32_t>(max_prompt));
    c.prompt.push_back(1);
    for (int t = 1; t < len; ++t) c.prompt.push_back(3 + static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab - 3)));
    c.max_new = 1 + static_cast<int>(rng() % 40);
    cases.push_back(std::move(c));
  }
  return cases;
}

inline std::unique_ptr<Engine> make_engine(const std::string& model, CachePolicy policy, int max_num_seqs, int budget,
                                           int64_t kv_bytes = 16 << 20, Device device = {}, bool overlap = true,
                                           int64_t compaction_bytes_per_step = EngineConfig{}.compaction_bytes_per_step) {
  EngineConfig config;
  config.model = model;
  config.device = device;
  config.batch_invariant = true;  // what these tests check (a no-op on the CPU)
  config.num_threads = 2;
  config.max_num_seqs = max_num_seqs;
  config.max_num_batched_tokens = budget;
  config.cache_policy = policy;
  config.kv_cache_bytes = kv_bytes;
  config.block_size = 8;
  config.overlap_scheduling = overlap;
  config.compaction_bytes_per_step = compaction_bytes_per_step;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// Submits cases[first, first + count) together (greedy, eos ignored) and
// returns their tokens in order.
inline std::vector<std::vector<int32_t>> run_all(Engine& engine, const std::vector<Case>& cases, size_t first,
                                                 size_t count) {
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (size_t i = first; i < first + count; ++i) {
    auto sink = std::make_shared<CollectingSink>();
    Request r;
    r.prompt_ids = cases[i].prompt;
    r.max_new_tokens = cases[i].max_new;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    r.sink = sink;
    EXPECT_TRUE(engine.submit(std::move(r)).ok());
    sinks.push_back(sink);
  }
  std::vector<std::vector<int32_t>> outputs;
  for (auto& sink : sinks) {
    EXPECT_TRUE(sink->wait());
    EXPECT_EQ(sink->num_finish_events, 1);
    outputs.push_back(sink->tokens);
  }
  return outputs;
}

// Test names for the (model, cache policy) parameters, e.g. "dummy_tiny_paged".
inline std::string model_policy_name(const ::testing::TestParamInfo<std::tuple<std::string, CachePolicy>>& info) {
  std::string name = std::get<0>(info.param) + "_" + cache_policy_name(std::get<1>(info.param));
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

}  // namespace zl::test
