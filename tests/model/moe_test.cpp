// Mixture-of-experts layers: the router's top-k, the grouped experts' batch
// invariance (a token's logits are the same bits whatever else is in the
// step), what the config readers accept and refuse, and the backends that
// refuse experts by name. Agreement with transformers and llama.cpp is in
// llama_logits_model_test and llamacpp_gguf_model_test (qwen3-moe, mixtral).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "bundle/model_loader.h"
#include "kernels/cpu/moe_route.h"
#include "model/hf_config.h"
#include "model/llama.h"
#include "model/llama_cuda.h"
#include "test_util.h"

namespace zl {
namespace {

TEST(MoeRouteTest, TopKBySoftmaxInExpertOrder) {
  const float logits[] = {0.5f, 2.0f, -1.0f, 1.0f, 2.0f};
  int32_t ids[3];
  float weights[3];
  cpu::route_top_k(logits, 5, 3, false, ids, weights);
  // 1 and 4 tie: both taken; then 3. Reported in ascending id.
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 3);
  EXPECT_EQ(ids[2], 4);
  double sum = 0.0;
  for (float l : logits) sum += std::exp(double{l});
  EXPECT_NEAR(weights[0], std::exp(2.0) / sum, 1e-6);
  EXPECT_NEAR(weights[1], std::exp(1.0) / sum, 1e-6);
  EXPECT_NEAR(weights[2], std::exp(2.0) / sum, 1e-6);

  cpu::route_top_k(logits, 5, 3, true, ids, weights);
  const double top = 2 * std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(weights[0], std::exp(2.0) / top, 1e-6);
  EXPECT_NEAR(weights[1], std::exp(1.0) / top, 1e-6);
  EXPECT_NEAR(weights[0] + weights[1] + weights[2], 1.0, 1e-6);

  // A tie at the cut goes to the lower id.
  const float tie[] = {1.0f, 3.0f, 1.0f, 1.0f};
  cpu::route_top_k(tie, 4, 2, true, ids, weights);
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[1], 1);
}

TEST(MoeRouteTest, NanLogitsStillPickValidExperts) {
  const float logits[] = {NAN, 1.0f, NAN, 0.0f};
  int32_t ids[2];
  float weights[2];
  cpu::route_top_k(logits, 4, 2, true, ids, weights);
  for (int32_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 4);
  }
  EXPECT_NE(ids[0], ids[1]);
}

// Logits of each sequence's last token: every sequence alone, then all in
// one step (prefill chunks of different lengths side by side).
class MoeBatchInvarianceTest : public ::testing::TestWithParam<Quantization> {};

TEST_P(MoeBatchInvarianceTest, SameBitsAloneAndInABatch) {
  LoadOptions options;
  options.weight_format.quantization = GetParam();
  auto source = open_model("dummy:tiny-moe", options);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto weights = load_model_weights(*source);
  ASSERT_TRUE(weights.ok()) << weights.status().to_string();
  const ModelConfig& c = source->config;
  ASSERT_TRUE(c.is_moe());
  ThreadPool pool(2);
  LlamaModel model(c, *weights, pool, 64);
  const int32_t vocab = c.vocab_size, num_seqs = 6;
  std::vector<std::vector<int32_t>> seqs;
  for (int32_t s = 0; s < num_seqs; ++s) {
    std::vector<int32_t> tokens;
    for (int32_t i = 0; i <= 2 * s; ++i) tokens.push_back((37 * s + 11 * i + 5) % vocab);
    seqs.push_back(tokens);
  }
  auto block_table = [](int32_t s) { return std::vector<int32_t>{s}; };  // one 16-token block each

  std::vector<float> alone(static_cast<size_t>(num_seqs * vocab));
  for (int32_t s = 0; s < num_seqs; ++s) {
    auto cache = KvCache::create(c, num_seqs, 16);
    ASSERT_TRUE(cache.ok());
    const std::vector<int32_t> table = block_table(s);
    SeqChunk chunk{0, static_cast<int32_t>(seqs[s].size()), 0, table};
    const int32_t row = chunk.num_tokens - 1;
    ASSERT_TRUE(model.forward({seqs[s], {&chunk, 1}, {&row, 1}}, **cache, &alone[static_cast<size_t>(s * vocab)]).ok());
  }

  auto cache = KvCache::create(c, num_seqs, 16);
  ASSERT_TRUE(cache.ok());
  std::vector<int32_t> tokens, rows;
  std::vector<std::vector<int32_t>> tables;
  std::vector<SeqChunk> chunks;
  for (int32_t s = 0; s < num_seqs; ++s) tables.push_back(block_table(s));
  for (int32_t s = 0; s < num_seqs; ++s) {
    const int32_t begin = static_cast<int32_t>(tokens.size()), n = static_cast<int32_t>(seqs[s].size());
    tokens.insert(tokens.end(), seqs[s].begin(), seqs[s].end());
    chunks.push_back({begin, n, 0, tables[s]});
    rows.push_back(begin + n - 1);
  }
  std::vector<float> together(static_cast<size_t>(num_seqs * vocab));
  ASSERT_TRUE(model.forward({tokens, chunks, rows}, **cache, together.data()).ok());
  EXPECT_EQ(std::memcmp(alone.data(), together.data(), alone.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, MoeBatchInvarianceTest,
                         ::testing::Values(Quantization::kNone, Quantization::kQ8_0, Quantization::kQ4_0,
                                           Quantization::kInt8),
                         [](const auto& info) {
                           WeightFormat f;
                           f.quantization = info.param;
                           return f.quantization == Quantization::kNone ? std::string("f32") : weight_format_name(f);
                         });

std::string moe_dir(const std::string& name, const std::string& extra) {
  const std::string config =
      R"({"architectures":["Qwen3MoeForCausalLM"],"hidden_size":64,"num_hidden_layers":2,)"
      R"("num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"intermediate_size":96,)"
      R"("max_position_embeddings":256,"vocab_size":256,"hidden_act":"silu",)"
      R"("num_experts":8,"num_experts_per_tok":2,"moe_intermediate_size":32)" +
      extra + "}";
  test::write_temp_file("moe/" + name + "/config.json", config);
  return test::temp_dir() + "/moe/" + name;
}

TEST(MoeConfigTest, ReadsQwen3MoeAndRefusesWhatItLacks) {
  auto ok = read_hf_config(moe_dir("ok", R"(,"norm_topk_prob":true,"mlp_only_layers":[],"decoder_sparse_step":1)"));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->num_experts, 8);
  EXPECT_EQ(ok->experts_per_token, 2);
  EXPECT_EQ(ok->expert_hidden_dim, 32);
  EXPECT_TRUE(ok->norm_topk_prob);
  EXPECT_TRUE(ok->qk_norm);

  struct Bad {
    const char* extra;
    const char* names;
  };
  for (const Bad& bad : {Bad{R"(,"mlp_only_layers":[1])", "mlp_only_layers"},
                         Bad{R"(,"decoder_sparse_step":2)", "decoder_sparse_step"},
                         Bad{R"(,"shared_expert_intermediate_size":64)", "shared_expert_intermediate_size"}}) {
    auto c = read_hf_config(moe_dir(bad.names, bad.extra));
    ASSERT_FALSE(c.ok()) << bad.extra;
    EXPECT_NE(c.status().message().find(bad.names), std::string::npos) << c.status().message();
  }
  // More experts per token than experts.
  std::string dir = moe_dir("k", "");
  test::write_temp_file("moe/k/config.json",
                        R"({"architectures":["MixtralForCausalLM"],"hidden_size":64,"num_hidden_layers":2,)"
                        R"("num_attention_heads":4,"intermediate_size":96,"max_position_embeddings":256,)"
                        R"("vocab_size":256,"num_local_experts":2,"num_experts_per_tok":3})");
  auto k = read_hf_config(dir);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("num_experts_per_tok"), std::string::npos) << k.status().message();
}

TEST(MoeConfigTest, CudaRefusesExpertsByName) {
  auto source = open_model("dummy:tiny-moe");
  ASSERT_TRUE(source.ok());
  Status s = cuda_supports(source->config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("moe"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zl
