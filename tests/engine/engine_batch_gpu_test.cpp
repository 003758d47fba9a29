// The engine on a CUDA device: N concurrent greedy requests produce exactly
// the tokens each produces alone under every cache policy (the KV pool and
// its layouts live in device memory), and aborted requests return every KV
// block. Reports skipped without a device.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "batch_cases.h"
#include "collecting_sink.h"
#include "kernels/cuda/runtime.h"
#include "test_util.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

constexpr Device kCuda0{Device::Kind::kCuda, 0};

bool skip_without_device(std::string* reason) { return cuda::device_count(reason) <= 0; }

class GpuBatchInvarianceTest : public ::testing::TestWithParam<std::tuple<std::string, CachePolicy>> {};

TEST_P(GpuBatchInvarianceTest, ConcurrentEqualsAlone) {
  std::string reason;
  if (skip_without_device(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  auto [model, policy] = GetParam();
  if (model.rfind("dummy:", 0) != 0) {
    model = test::shared_path(model);
    if (model.empty()) GTEST_SKIP() << "../shared is missing";
  }
  std::vector<test::Case> cases = test::make_cases(64, 512, 80, 4321);
  auto alone_engine = test::make_engine(model, policy, 1, 32, 16 << 20, kCuda0);
  ASSERT_NE(alone_engine, nullptr);
  std::vector<std::vector<int32_t>> alone;
  for (size_t i = 0; i < cases.size(); ++i) alone.push_back(test::run_all(*alone_engine, cases, i, 1)[0]);
  alone_engine.reset();

  auto batch_engine = test::make_engine(model, policy, 64, 48, 16 << 20, kCuda0);
  ASSERT_NE(batch_engine, nullptr);
  for (size_t n : {2u, 8u, 64u}) {
    std::vector<std::vector<int32_t>> together = test::run_all(*batch_engine, cases, 0, n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(together[i], alone[i]) << "request " << i << " of " << n;
  }
  EngineStats stats = batch_engine->stats();
  EXPECT_GT(stats.batch_size_mean, 2.0);
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Models, GpuBatchInvarianceTest,
    ::testing::Combine(::testing::Values("dummy:tiny", "models/stories260K.gguf"),
                       ::testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid)),
    test::model_policy_name);

// 32 long requests, each aborted once it has streamed a token: every one gets
// exactly one terminal event (aborted) and the device pool is empty after.
TEST(GpuEngineTest, AbortedRequestsReturnTheirBlocks) {
  std::string reason;
  if (skip_without_device(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  auto engine = test::make_engine("dummy:tiny", CachePolicy::kPaged, 32, 64, 16 << 20, kCuda0);
  ASSERT_NE(engine, nullptr);
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  std::vector<RequestId> ids;
  for (int i = 0; i < 32; ++i) {
    auto sink = std::make_shared<test::CollectingSink>();
    Request r;
    r.prompt_ids = {1, 5 + i, 7, 9};
    r.max_new_tokens = 400;
    r.ignore_eos = true;
    r.sink = sink;
    auto id = engine->submit(std::move(r));
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    ids.push_back(*id);
    sinks.push_back(sink);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (sinks[i]->tokens_so_far() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    engine->abort(ids[i]);
  }
  for (auto& sink : sinks) {
    ASSERT_TRUE(sink->wait());
    EXPECT_EQ(sink->num_finish_events, 1);
    EXPECT_EQ(sink->finish.reason, FinishReason::kAborted);
    EXPECT_LT(sink->tokens.size(), 400u);
  }
  EXPECT_EQ(engine->stats().kv.num_used_blocks, 0);
}

}  // namespace
}  // namespace zl
