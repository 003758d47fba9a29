// Prefix reuse through cache signatures: 200 requests sharing a 512-token
// prefix with distinct 32-token suffixes take at least 90% of the shared
// prefix of requests 2..200 from the cache, produce the same tokens as the
// same requests computed without reuse, and a different cache_salt shares
// nothing.
#include <gtest/gtest.h>

#include <random>

#include "collecting_sink.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

TEST(PrefixReuseTest, SharedPrefixComesFromTheCache) {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 2;
  config.max_num_seqs = 32;
  config.max_num_batched_tokens = 512;
  config.kv_cache_bytes = 64 << 20;
  auto engine_or = Engine::create(config);
  ASSERT_TRUE(engine_or.ok()) << engine_or.status().to_string();
  Engine& engine = **engine_or;

  std::mt19937 rng(7);
  std::vector<int32_t> prefix = {256};
  while (prefix.size() < 512) prefix.push_back(3 + static_cast<int32_t>(rng() % 250));
  auto make_prompt = [&](int i) {
    std::vector<int32_t> p = prefix;
    for (int t = 0; t < 32; ++t) p.push_back(3 + static_cast<int32_t>((i * 37 + t * 11 + rng() % 7) % 250));
    return p;
  };
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 200; ++i) prompts.push_back(make_prompt(i));

  auto submit = [&](int i, const std::string& salt) {
    auto sink = std::make_shared<test::CollectingSink>();
    Request r;
    r.prompt_ids = prompts[static_cast<size_t>(i)];
    r.max_new_tokens = 8;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    r.cache_salt = salt;
    r.sink = sink;
    EXPECT_TRUE(engine.submit(std::move(r)).ok());
    return sink;
  };

  auto first = submit(0, "");
  ASSERT_TRUE(first->wait());
  EXPECT_EQ(first->finish.num_cached_prompt_tokens, 0);
  std::vector<std::shared_ptr<test::CollectingSink>> rest;
  for (int i = 1; i < 200; ++i) rest.push_back(submit(i, ""));
  int64_t cached = 0;
  for (auto& sink : rest) {
    ASSERT_TRUE(sink->wait());
    cached += sink->finish.num_cached_prompt_tokens;
  }
  const int64_t shared = 199 * 512;
  EXPECT_GE(cached, shared * 9 / 10) << cached << " of " << shared << " shared prefix tokens came from the cache";
  RecordProperty("prefix_tokens_from_cache_pct", static_cast<int>(100 * cached / shared));

  // Without reuse (a salt of its own each): the same tokens, nothing shared.
  for (int i = 0; i < 20; ++i) {
    auto alone = submit(i * 10, "private-" + std::to_string(i));
    ASSERT_TRUE(alone->wait());
    EXPECT_EQ(alone->finish.num_cached_prompt_tokens, 0) << i;
    const auto& reused = i == 0 ? first->tokens : rest[static_cast<size_t>(i * 10 - 1)]->tokens;
    EXPECT_EQ(alone->tokens, reused) << "request " << i * 10;
  }
  EngineStats stats = engine.stats();
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  EXPECT_GT(stats.kv.prefix_hit_tokens, 0);
}

}  // namespace
}  // namespace zl
