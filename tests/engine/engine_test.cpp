// The public engine API on dummy:tiny: what submit rejects (and why), abort
// in each state, priorities, stop rules, and that every accepted request gets
// exactly one terminal event with its KV memory back in the pool.
#include "zerolayer/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "collecting_sink.h"
#include "zerolayer/request_fields.h"

namespace zl {
namespace {

std::unique_ptr<Engine> make_engine(int max_num_seqs = 8, int64_t kv_bytes = 8 << 20, int block_size = 16) {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 1;
  config.max_num_seqs = max_num_seqs;
  config.max_num_batched_tokens = 64;
  config.kv_cache_bytes = kv_bytes;
  config.block_size = block_size;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return std::move(*engine);
}

Request greedy(std::vector<int32_t> prompt, int max_new, std::shared_ptr<test::CollectingSink> sink) {
  Request r;
  r.prompt_ids = std::move(prompt);
  r.max_new_tokens = max_new;
  r.sampling.temperature = 0.0f;
  r.sink = std::move(sink);
  return r;
}

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { engine_ = make_engine().release(); }
  static void TearDownTestSuite() { delete engine_; }
  static Engine* engine_;
};
Engine* EngineTest::engine_ = nullptr;

TEST_F(EngineTest, SubmitRejectsBadRequestsNamingTheField) {
  auto sink = std::make_shared<test::CollectingSink>();
  auto expect_rejected = [&](Request r, const std::string& needle) {
    auto id = engine_->submit(std::move(r));
    ASSERT_FALSE(id.ok()) << needle;
    EXPECT_NE(id.status().message().find(needle), std::string::npos) << id.status().message();
  };
  expect_rejected(greedy({}, 4, sink), "prompt");
  expect_rejected(greedy({1, 600}, 4, sink), "token id 600");
  expect_rejected(greedy({1, 2}, 0, sink), "max_new_tokens");
  expect_rejected(greedy({1, 2}, 4, nullptr), "sink");
  Request nan = greedy({1, 2}, 4, sink);
  nan.sampling.temperature = std::numeric_limits<float>::quiet_NaN();
  expect_rejected(std::move(nan), "temperature");
  Request bad_prob = greedy({1, 2}, 4, sink);
  bad_prob.min_token_prob = 2.0f;
  expect_rejected(std::move(bad_prob), "min_token_prob");
  Request bad_stop = greedy({1, 2}, 4, sink);
  bad_stop.stop_token_ids = {3, 600};
  expect_rejected(std::move(bad_stop), "stop_token_ids");
  Request long_stop = greedy({1, 2}, 4, sink);
  long_stop.stop = {"ok", std::string(kMaxStopBytes + 1, 'x')};
  expect_rejected(std::move(long_stop), "stop is longer than 1024 bytes");
  Request long_salt = greedy({1, 2}, 4, sink);
  long_salt.cache_salt.assign(kMaxCacheSaltBytes + 1, 's');
  expect_rejected(std::move(long_salt), "cache_salt is longer than 256 bytes");
  expect_rejected(greedy(std::vector<int32_t>(1024, 5), 4, sink), "context");
  EXPECT_EQ(sink->num_finish_events, 0);  // rejected requests send no event
}

TEST_F(EngineTest, ImpossibleRequestIsRejectedAtSubmit) {
  // 64 KiB of KV holds 64 tokens of dummy:tiny (1 KiB per token in f16).
  auto small = make_engine(4, 64 << 10);
  auto sink = std::make_shared<test::CollectingSink>();
  auto id = small->submit(greedy({1, 2, 3}, 100, sink));
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("KV pool holds"), std::string::npos) << id.status().message();
  EXPECT_TRUE(small->submit(greedy({1, 2, 3}, 20, sink)).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->finish.reason, FinishReason::kLength);
}

TEST_F(EngineTest, GreedyRequestFinishesOnceWithLengthAndTimings) {
  auto sink = std::make_shared<test::CollectingSink>();
  ASSERT_TRUE(engine_->submit(greedy({256, 10, 20, 30}, 12, sink)).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->num_finish_events, 1);
  EXPECT_EQ(sink->tokens.size(), 12u);
  EXPECT_EQ(sink->finish.reason, FinishReason::kLength);
  EXPECT_EQ(sink->finish.num_prompt_tokens, 4);
  EXPECT_EQ(sink->finish.num_generated_tokens, 12);
  const RequestTimings& t = sink->finish.timings;
  EXPECT_GT(t.first_token_s, 0.0);
  EXPECT_GE(t.finish_s, t.first_token_s);
  EXPECT_LE(t.queue_s, t.first_token_s);
  EngineStats stats = engine_->stats();
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  EXPECT_GE(stats.inter_token_ns.count(), 11u);
  EXPECT_GE(stats.time_to_first_token_ns.count(), 1u);
  EXPECT_GE(stats.e2e_ns.count(), 1u);
  EXPECT_GT(stats.e2e_ns.quantile(0.5), 0u);
}

TEST_F(EngineTest, TextPromptIsTokenizedWithBos) {
  auto sink = std::make_shared<test::CollectingSink>();
  Request r = greedy({}, 3, sink);
  r.prompt_text = "hi";
  ASSERT_TRUE(engine_->submit(std::move(r)).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->finish.num_prompt_tokens, 3);  // <s> h i
}

TEST_F(EngineTest, AbortEndsARunningRequestOnce) {
  auto sink = std::make_shared<test::CollectingSink>();
  auto id = engine_->submit(greedy({256, 1}, 500, sink));
  ASSERT_TRUE(id.ok());
  engine_->abort(*id);
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->finish.reason, FinishReason::kAborted);
  engine_->abort(*id);  // already finished: no second event
  engine_->abort(987654);  // unknown: ignored
  EngineStats stats = engine_->stats();
  EXPECT_EQ(sink->num_finish_events, 1);
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  EXPECT_EQ(stats.num_running, 0);
}

TEST_F(EngineTest, MinTokenProbStopsEarly) {
  auto sink = std::make_shared<test::CollectingSink>();
  Request r = greedy({256, 7, 8}, 50, sink);
  r.sampling.temperature = 1.0f;
  r.sampling.has_seed = true;
  r.min_token_prob = 0.999f;  // a random model is never that sure
  ASSERT_TRUE(engine_->submit(std::move(r)).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->finish.reason, FinishReason::kStop);
  EXPECT_EQ(sink->finish.stop_detail, "min_token_prob");
  EXPECT_EQ(sink->tokens.size(), 0u);
}

TEST_F(EngineTest, StopTokenIdsAndIgnoreEos) {
  // Find the first greedy token, then ask to stop on it.
  auto probe = std::make_shared<test::CollectingSink>();
  ASSERT_TRUE(engine_->submit(greedy({256, 42}, 1, probe)).ok());
  ASSERT_TRUE(probe->wait());
  ASSERT_EQ(probe->tokens.size(), 1u);
  auto sink = std::make_shared<test::CollectingSink>();
  Request r = greedy({256, 42}, 10, sink);
  r.stop_token_ids = {probe->tokens[0]};
  ASSERT_TRUE(engine_->submit(std::move(r)).ok());
  ASSERT_TRUE(sink->wait());
  EXPECT_EQ(sink->finish.reason, FinishReason::kStop);
  EXPECT_EQ(sink->finish.stop_detail, "eos");
  EXPECT_TRUE(sink->tokens.empty());
}

TEST_F(EngineTest, SeededSamplingIsReproducible) {
  auto run = [&] {
    auto sink = std::make_shared<test::CollectingSink>();
    Request r = greedy({256, 3, 4, 5}, 20, sink);
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.9f;
    r.sampling.has_seed = true;
    r.sampling.seed = 99;
    EXPECT_TRUE(engine_->submit(std::move(r)).ok());
    EXPECT_TRUE(sink->wait());
    return sink->tokens;
  };
  EXPECT_EQ(run(), run());
}

// Sequences decoding in step complete their blocks in the same step; the
// engine signs at most ceil(max_num_seqs / block_size) of those a step and
// the rest later or at finish. Whatever the order, every computed full block
// ends up signed and shareable.
TEST(EngineSigningTest, DecodeBlocksCompletedInStepAreAllSignedByTheEnd) {
  constexpr int kSeqs = 16, kBlock = 4, kPrompt = 4, kNew = 21;
  auto engine = make_engine(kSeqs, 8 << 20, kBlock);
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  for (int i = 0; i < kSeqs; ++i) {  // distinct first blocks: distinct signature chains
    sinks.push_back(std::make_shared<test::CollectingSink>());
    ASSERT_TRUE(engine->submit(greedy({256, i + 1, 7, 9}, kNew, sinks.back())).ok());
  }
  for (auto& sink : sinks) ASSERT_TRUE(sink->wait());
  // The last sampled token is never computed: (4 + 21 - 1) / 4 = 6 full blocks each.
  constexpr int kBlocksPerSeq = (kPrompt + kNew - 1) / kBlock;
  EXPECT_EQ(engine->stats().kv.num_live_signatures, kSeqs * kBlocksPerSeq);
  // A prompt of sequence 0's whole text reuses all of its blocks.
  std::vector<int32_t> text = {256, 1, 7, 9};
  text.insert(text.end(), sinks[0]->tokens.begin(), sinks[0]->tokens.end());
  auto again = std::make_shared<test::CollectingSink>();
  ASSERT_TRUE(engine->submit(greedy(text, 1, again)).ok());
  ASSERT_TRUE(again->wait());
  EXPECT_EQ(again->finish.num_cached_prompt_tokens, kBlocksPerSeq * kBlock);
}

// Sequences decoding in step reuse one batch, advanced in place, and record
// their inter-token times together: still exactly one per token after each
// request's first. (That the reused batch computes the right tokens is
// checked against llama.cpp by generate_model_test, alone and together.)
TEST(EngineSteadyBatchTest, InStepDecodesRecordEveryInterTokenTime) {
  constexpr int kSeqs = 8, kNew = 40;
  auto engine = make_engine(kSeqs);
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  for (int i = 0; i < kSeqs; ++i) {
    sinks.push_back(std::make_shared<test::CollectingSink>());
    Request r = greedy({256, 40 + i, 7}, kNew, sinks.back());
    r.ignore_eos = true;
    ASSERT_TRUE(engine->submit(std::move(r)).ok());
  }
  for (auto& sink : sinks) ASSERT_TRUE(sink->wait());
  EngineStats stats = engine->stats();
  EXPECT_EQ(stats.generation_tokens_total, int64_t{kSeqs} * kNew);
  EXPECT_EQ(stats.inter_token_ns.count(), uint64_t{kSeqs} * (kNew - 1));
  EXPECT_GT(stats.batch_size_mean, kSeqs / 2.0);
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
}

// The decode rows stay from step to step while sequences come and go. A
// prompt the prefix cache covers up to its last token decodes in its first
// step: it must join those rows at once, not wait until they are rebuilt
// (here: until the long request beside it ends).
TEST(EngineKeptRowsTest, AFullyCachedPromptDecodesBesideKeptRows) {
  constexpr int kBlock = 4, kLong = 400;
  auto engine = make_engine(4, 8 << 20, kBlock);
  auto first = std::make_shared<test::CollectingSink>();
  ASSERT_TRUE(engine->submit(greedy({256, 1, 7, 9}, 2, first)).ok());  // its one block is signed and cached
  ASSERT_TRUE(first->wait());
  auto running = std::make_shared<test::CollectingSink>();
  Request r = greedy({256, 2, 7, 9}, kLong, running);
  r.ignore_eos = true;
  ASSERT_TRUE(engine->submit(std::move(r)).ok());
  while (running->tokens_so_far() < 2) std::this_thread::yield();  // decoding: its row is kept
  auto cached = std::make_shared<test::CollectingSink>();
  ASSERT_TRUE(engine->submit(greedy({256, 1, 7, 9, 11}, 2, cached)).ok());
  ASSERT_TRUE(cached->wait());
  EXPECT_EQ(cached->finish.num_cached_prompt_tokens, kBlock);
  EXPECT_LT(running->tokens_so_far(), static_cast<size_t>(kLong));
  ASSERT_TRUE(running->wait());
  EXPECT_EQ(running->tokens.size(), static_cast<size_t>(kLong));
}

// The same when a prefill chunk stops one token short of the prompt's end:
// beside one kept decode row, a 64-token prompt gets 63 of the 64-token budget.
TEST(EngineKeptRowsTest, APromptOneTokenShortAfterItsChunkDecodesBesideKeptRows) {
  constexpr int kLong = 400;
  auto engine = make_engine(4);  // max_num_batched_tokens 64
  auto running = std::make_shared<test::CollectingSink>();
  Request r = greedy({256, 2, 7, 9}, kLong, running);
  r.ignore_eos = true;
  ASSERT_TRUE(engine->submit(std::move(r)).ok());
  while (running->tokens_so_far() < 2) std::this_thread::yield();  // decoding: its row is kept
  std::vector<int32_t> prompt(64);
  for (int i = 0; i < 64; ++i) prompt[i] = 10 + i;
  auto chunked = std::make_shared<test::CollectingSink>();
  ASSERT_TRUE(engine->submit(greedy(prompt, 2, chunked)).ok());
  ASSERT_TRUE(chunked->wait());
  EXPECT_LT(running->tokens_so_far(), static_cast<size_t>(kLong));
  ASSERT_TRUE(running->wait());
  EXPECT_EQ(running->tokens.size(), static_cast<size_t>(kLong));
}

TEST(EngineShutdownTest, DestroyingTheEngineAbortsWhatIsInFlight) {
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  {
    auto engine = make_engine(2);
    for (int i = 0; i < 6; ++i) {
      sinks.push_back(std::make_shared<test::CollectingSink>());
      ASSERT_TRUE(engine->submit(greedy({256, i}, 1000, sinks.back())).ok());
    }
  }
  for (auto& sink : sinks) {
    EXPECT_EQ(sink->num_finish_events, 1);
    EXPECT_EQ(sink->finish.reason, FinishReason::kAborted);
  }
}

}  // namespace
}  // namespace zl
