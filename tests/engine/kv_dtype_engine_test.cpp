// The KV cache's storage format through the public engine API on dummy:tiny
// (4 layers, 2 KV heads of 32): what auto resolves to, bytes per token and
// the tokens a fixed pool holds in each format, a request served in each,
// a prefix reused from 8-bit blocks, and CUDA's refusal of what it lacks.
#include <gtest/gtest.h>

#include "collecting_sink.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

constexpr int64_t kPoolBytes = 256 << 10;

StatusOr<std::unique_ptr<Engine>> make_engine(KvCacheDtype dtype, WeightFormat weights = {}) {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 1;
  config.max_num_seqs = 4;
  config.max_num_batched_tokens = 64;
  config.kv_cache_bytes = kPoolBytes;
  config.kv_cache_dtype = dtype;
  config.weight_format = weights;
  return Engine::create(config);
}

std::shared_ptr<test::CollectingSink> run_greedy(Engine& engine, std::vector<int32_t> prompt, int max_new) {
  auto sink = std::make_shared<test::CollectingSink>();
  Request r;
  r.prompt_ids = std::move(prompt);
  r.max_new_tokens = max_new;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;
  r.sink = sink;
  EXPECT_TRUE(engine.submit(std::move(r)).ok());
  EXPECT_TRUE(sink->wait());
  return sink;
}

TEST(KvDtypeEngineTest, AutoIsSixteenBitsChosenByTheWeights) {
  auto f32_weights = make_engine(KvCacheDtype::kAuto);
  ASSERT_TRUE(f32_weights.ok()) << f32_weights.status().to_string();
  EXPECT_EQ((*f32_weights)->model_info().kv_cache_dtype, KvCacheDtype::kF16);
  WeightFormat bf16;
  bf16.convert_dtype = true;
  bf16.dtype = DType::kBF16;
  auto bf16_weights = make_engine(KvCacheDtype::kAuto, bf16);
  ASSERT_TRUE(bf16_weights.ok()) << bf16_weights.status().to_string();
  EXPECT_EQ((*bf16_weights)->model_info().kv_cache_dtype, KvCacheDtype::kBF16);
}

// Keys and values of 4 layers x 64 values a token: f32 2048 bytes, 16-bit
// 1024, 8-bit 544 (64 codes and 2 f16 scales per row). A 256 KiB pool holds
// 128, 256 and 480 tokens (whole blocks of 16: 8, 16 and 30).
TEST(KvDtypeEngineTest, EachFormatSizesThePoolAndServesARequest) {
  const struct {
    KvCacheDtype dtype;
    int64_t bytes_per_token;
    int32_t capacity;
  } cases[] = {{KvCacheDtype::kF32, 2048, 128},
               {KvCacheDtype::kF16, 1024, 256},
               {KvCacheDtype::kBF16, 1024, 256},
               {KvCacheDtype::kQ8_0, 544, 480},
               {KvCacheDtype::kFp8, 544, 480}};
  for (const auto& c : cases) {
    auto engine = make_engine(c.dtype);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    const Engine::ModelInfo& info = (*engine)->model_info();
    EXPECT_EQ(info.kv_cache_dtype, c.dtype);
    EXPECT_EQ(info.kv_bytes_per_token, c.bytes_per_token) << kv_cache_dtype_name(c.dtype);
    EXPECT_EQ(info.kv_capacity_tokens, c.capacity) << kv_cache_dtype_name(c.dtype);
    auto sink = run_greedy(**engine, {256, 10, 20, 30, 40}, 40);
    EXPECT_EQ(sink->num_finish_events, 1);
    EXPECT_EQ(sink->finish.reason, FinishReason::kLength);
    EXPECT_EQ(sink->tokens.size(), 40u);
    EXPECT_EQ((*engine)->stats().kv.num_used_blocks, 0);
  }
}

// A prompt's blocks, kept under their signatures, serve the same prompt
// again: reading the stored 8-bit rows gives the tokens computing them did
// (a row is quantized the same way whatever the batch).
TEST(KvDtypeEngineTest, APrefixReusedFromEightBitBlocksGivesTheSameTokens) {
  for (KvCacheDtype dtype : {KvCacheDtype::kQ8_0, KvCacheDtype::kFp8}) {
    auto engine = make_engine(dtype);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    std::vector<int32_t> prompt = {256};
    for (int i = 0; i < 70; ++i) prompt.push_back(3 + (i * 37) % 250);
    auto first = run_greedy(**engine, prompt, 16);
    auto again = run_greedy(**engine, prompt, 16);
    EXPECT_EQ(first->finish.num_cached_prompt_tokens, 0);
    EXPECT_GE(again->finish.num_cached_prompt_tokens, 64) << kv_cache_dtype_name(dtype);
    EXPECT_EQ(first->tokens, again->tokens) << kv_cache_dtype_name(dtype);
  }
}

TEST(KvDtypeEngineTest, CudaRefusesFormatsItLacksNamingTheField) {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 1;
  config.device.kind = Device::Kind::kCuda;
  config.kv_cache_dtype = KvCacheDtype::kQ8_0;
  auto engine = Engine::create(config);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("kv_cache_dtype q8_0"), std::string::npos) << engine.status().message();
}

}  // namespace
}  // namespace zl
