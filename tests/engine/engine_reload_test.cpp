// Engine::reload: the engine empties (running requests finish on the old
// weights), requests submitted meanwhile wait and then run on the new ones,
// each request gets one terminal event, and a model with another tokenizer
// is refused while the old one serves on.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "collecting_sink.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

std::unique_ptr<Engine> make_engine(const std::string& model) {
  EngineConfig config;
  config.model = model;
  config.num_threads = 1;
  config.max_num_seqs = 8;
  config.max_num_batched_tokens = 64;
  config.kv_cache_bytes = 8 << 20;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return std::move(*engine);
}

std::shared_ptr<test::CollectingSink> run(Engine& engine, int max_new) {
  auto sink = std::make_shared<test::CollectingSink>();
  Request r;
  r.prompt_ids = {5, 6, 7, 8};
  r.max_new_tokens = max_new;
  r.ignore_eos = true;
  r.sampling.temperature = 0.0f;
  r.sink = sink;
  EXPECT_TRUE(engine.submit(std::move(r)).ok());
  return sink;
}

TEST(EngineReload, RunningRequestsFinishAndLaterOnesWaitForTheNewWeights) {
  auto engine = make_engine("dummy:tiny:1");
  auto before = run(*engine, 8);
  ASSERT_TRUE(before->wait());
  auto other = make_engine("dummy:tiny:2");
  auto expected_after = run(*other, 8);
  ASSERT_TRUE(expected_after->wait());
  other.reset();
  ASSERT_NE(before->tokens, expected_after->tokens);  // the two seeds differ

  auto long_one = run(*engine, 1000);  // running when the reload is asked
  while (long_one->tokens_so_far() == 0) std::this_thread::yield();
  Status reloaded;
  std::thread reloader([&] { reloaded = engine->reload("dummy:tiny:2"); });
  // Once the engine has taken the reload (stats are answered in order after
  // it), what is submitted waits for it.
  bool taken = false;
  while (!(taken = engine->stats().reload_pending) && long_one->tokens_so_far() < 1000u) std::this_thread::yield();
  EXPECT_TRUE(taken) << "the long request ended before the engine took the reload";
  std::vector<std::shared_ptr<test::CollectingSink>> meanwhile;
  for (int i = 0; i < 4; ++i) meanwhile.push_back(run(*engine, 8));
  reloader.join();
  ASSERT_TRUE(reloaded.ok()) << reloaded.to_string();
  ASSERT_TRUE(long_one->wait());
  EXPECT_EQ(long_one->finish.reason, FinishReason::kLength);
  EXPECT_EQ(long_one->tokens.size(), 1000u);
  EXPECT_EQ(long_one->num_finish_events, 1);
  for (auto& sink : meanwhile) {
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->num_finish_events, 1);
    // Submitted before the reload finished, run after it: the new weights'.
    EXPECT_EQ(sink->tokens, expected_after->tokens);
  }
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
}

TEST(EngineReload, AnotherTokenizerIsRefusedAndTheOldModelServesOn) {
  auto engine = make_engine("dummy:tiny:1");
  auto before = run(*engine, 8);
  ASSERT_TRUE(before->wait());
  Status refused = engine->reload("dummy:llama-110m");  // a 32000-token vocabulary
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("tokenizer"), std::string::npos) << refused.message();
  auto after = run(*engine, 8);
  ASSERT_TRUE(after->wait());
  EXPECT_EQ(after->tokens, before->tokens);
  EXPECT_FALSE(engine->reload("no/such/model/dir").ok());
  EXPECT_TRUE(engine->reload().ok());  // the same model, read again
  auto again = run(*engine, 8);
  ASSERT_TRUE(again->wait());
  EXPECT_EQ(again->tokens, before->tokens);
}

}  // namespace
}  // namespace zl
