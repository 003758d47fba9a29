// Greedy generation through the engine on a real model against llama.cpp:
// for each prompt in tests/golden/generate/stories260K.json
// (scripts/golden/make_generate_goldens.py) the prompt tokenizes to
// llama.cpp's ids, and the greedy tokens and text are exactly llama.cpp's,
// whether the requests run one at a time or all together, and under every
// cache policy.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "bundle/model_loader.h"
#include "collecting_sink.h"
#include "test_util.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

class Stories260KTest : public ::testing::TestWithParam<CachePolicy> {
 protected:
  void SetUp() override {
    path_ = test::shared_path("models/stories260K.gguf");
    if (path_.empty()) GTEST_SKIP() << "../shared is missing (stories260K.gguf)";
    std::ifstream in(test::golden_path("generate/stories260K.json"));
    cases_ = nlohmann::json::parse(in);
    ASSERT_GE(cases_.size(), 6u);
  }

  std::unique_ptr<Engine> make_engine(int max_num_seqs) {
    EngineConfig config;
    config.model = path_;
    config.num_threads = 2;
    config.max_num_seqs = max_num_seqs;
    config.max_num_batched_tokens = 16;  // prompts prefill in several chunks
    config.cache_policy = GetParam();
    config.kv_cache_bytes = 8 << 20;
    auto engine = Engine::create(config);
    EXPECT_TRUE(engine.ok()) << engine.status().to_string();
    return engine.ok() ? std::move(*engine) : nullptr;
  }

  std::shared_ptr<test::CollectingSink> submit(Engine& engine, const nlohmann::json& c) {
    auto sink = std::make_shared<test::CollectingSink>();
    Request request;
    request.prompt_text = c["prompt"].get<std::string>();
    request.max_new_tokens = static_cast<int32_t>(c["generated_ids"].size());
    request.sampling.temperature = 0.0f;
    request.sink = sink;
    EXPECT_TRUE(engine.submit(std::move(request)).ok());
    return sink;
  }

  void expect_matches(const test::CollectingSink& sink, const nlohmann::json& c) {
    EXPECT_EQ(sink.num_finish_events, 1);
    EXPECT_EQ(sink.finish.num_prompt_tokens, static_cast<int32_t>(c["prompt_ids"].size()));
    EXPECT_EQ(sink.tokens, c["generated_ids"].get<std::vector<int32_t>>()) << c["prompt"];
    EXPECT_EQ(sink.text, c["text"].get<std::string>()) << c["prompt"];
    EXPECT_EQ(sink.finish.reason, FinishReason::kLength);
  }

  std::string path_;
  nlohmann::json cases_;
};

TEST_P(Stories260KTest, OneAtATimeMatchesLlamaCpp) {
  auto engine = make_engine(1);
  ASSERT_NE(engine, nullptr);
  for (const auto& c : cases_) {
    auto sink = submit(*engine, c);
    ASSERT_TRUE(sink->wait());
    expect_matches(*sink, c);
  }
}

TEST_P(Stories260KTest, AllTogetherMatchLlamaCpp) {
  auto engine = make_engine(64);
  ASSERT_NE(engine, nullptr);
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  for (int round = 0; round < 4; ++round)
    for (const auto& c : cases_) sinks.push_back(submit(*engine, c));
  for (size_t i = 0; i < sinks.size(); ++i) {
    ASSERT_TRUE(sinks[i]->wait());
    expect_matches(*sinks[i], cases_[i % cases_.size()]);
  }
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  EXPECT_GT(stats.batch_size_mean, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Policies, Stories260KTest,
                         ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid),
                         [](const auto& info) { return std::string(cache_policy_name(info.param)); });

}  // namespace
}  // namespace zl
