#include "model/hf_config.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace zl {
namespace {

// A small valid Llama config; `extra` is spliced in as more fields (later
// duplicates are not allowed, so tests replace fields through `base`).
std::string llama_config(const std::string& extra = "") {
  std::string c = R"({"architectures":["LlamaForCausalLM"],"model_type":"llama",)"
                  R"("hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,)"
                  R"("intermediate_size":172,"max_position_embeddings":256,)"
                  R"("rms_norm_eps":1e-05,"vocab_size":512,"bos_token_id":1,"hidden_act":"silu")";
  if (!extra.empty()) c += "," + extra;
  return c + "}";
}

// Writes files into a fresh model directory and returns its path.
std::string model_dir(const std::string& name, const std::string& config,
                      const std::string& generation_config = "") {
  test::write_temp_file("hf/" + name + "/config.json", config);
  if (!generation_config.empty())
    test::write_temp_file("hf/" + name + "/generation_config.json", generation_config);
  return test::temp_dir() + "/hf/" + name;
}

// The error for a config; checks the code and that the message names the file.
std::string error_of(const std::string& dir, StatusCode code) {
  StatusOr<ModelConfig> c = read_hf_config(dir);
  EXPECT_FALSE(c.ok());
  if (c.ok()) return "";
  EXPECT_EQ(c.status().code(), code) << c.status().to_string();
  EXPECT_NE(c.status().message().find("config.json"), std::string::npos) << c.status().message();
  return c.status().message();
}

TEST(HfConfigTest, ReadsLlamaWithDefaults) {
  StatusOr<ModelConfig> c = read_hf_config(model_dir("llama", llama_config(R"("eos_token_id":2)")));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "llama");
  EXPECT_EQ(c->source_arch, "LlamaForCausalLM");
  EXPECT_EQ(c->dim, 64);
  EXPECT_EQ(c->num_layers, 2);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 8);  // defaults to heads
  EXPECT_EQ(c->head_dim, 8);      // hidden / heads
  EXPECT_EQ(c->hidden_dim, 172);
  EXPECT_EQ(c->max_seq_len, 256);
  EXPECT_FLOAT_EQ(c->rms_norm_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c->rope_theta, 10000.0f);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  EXPECT_FALSE(c->rope_interleaved);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_TRUE(c->layer_sliding.empty());
  EXPECT_EQ(c->vocab_size, 512);
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2}));
}

TEST(HfConfigTest, Llama3RopeScalingEosListAndGenerationConfig) {
  std::string dir = model_dir("llama3",
      llama_config(R"("num_key_value_heads":2,"head_dim":null,"rope_theta":500000.0,)"
                   R"("tie_word_embeddings":true,"attention_bias":true,"eos_token_id":[2,3],)"
                   R"("rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,)"
                   R"("high_freq_factor":4.0,"original_max_position_embeddings":8192})"),
      R"({"bos_token_id":0,"eos_token_id":[3,4],"temperature":0.6})");
  StatusOr<ModelConfig> c = read_hf_config(dir);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_FLOAT_EQ(c->rope_theta, 500000.0f);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_FLOAT_EQ(c->rope_scaling.factor, 8.0f);
  EXPECT_FLOAT_EQ(c->rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_TRUE(c->qkv_bias);  // LlamaAttention: attention_bias is on q, k, v and o
  EXPECT_TRUE(c->o_bias);
  EXPECT_EQ(c->bos_token_id, 0);  // generation_config wins
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2, 3, 4}));
}

TEST(HfConfigTest, LinearScalingWithLegacyTypeKey) {
  StatusOr<ModelConfig> c = read_hf_config(
      model_dir("linear", llama_config(R"("rope_scaling":{"type":"linear","factor":2.0})")));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_FLOAT_EQ(c->rope_scaling.factor, 2.0f);
}

TEST(HfConfigTest, MistralSlidingWindowOnEveryLayer) {
  std::string base = R"({"architectures":["MistralForCausalLM"],"hidden_size":64,)"
                     R"("num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":2,)"
                     R"("intermediate_size":128,"max_position_embeddings":1024,"vocab_size":100,)"
                     R"("eos_token_id":2,"attention_bias":true)";
  StatusOr<ModelConfig> c = read_hf_config(model_dir("mistral", base + R"(,"sliding_window":16})"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "mistral");
  EXPECT_FALSE(c->qkv_bias);  // MistralAttention has no bias whatever the field says
  EXPECT_EQ(c->sliding_window, 16);
  EXPECT_EQ(c->layer_sliding, (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(c->layer_window(1), 16);
  c = read_hf_config(model_dir("mistral_null", base + R"(,"sliding_window":null})"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->layer_sliding.empty());
  EXPECT_EQ(c->layer_window(0), 0);
  c = read_hf_config(model_dir("mistral_absent", base + "}"));  // transformers' default
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->layer_window(0), 4096);
  std::string msg = error_of(model_dir("mistral_bad", base + R"(,"sliding_window":"4096"})"), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("sliding_window"), std::string::npos);
}

std::string qwen_config(const std::string& arch, const std::string& extra) {
  return R"({"architectures":[")" + arch + R"("],"hidden_size":64,)"
         R"("num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,)"
         R"("intermediate_size":128,"max_position_embeddings":1024,"vocab_size":100,)"
         R"("rope_theta":1000000.0,"tie_word_embeddings":true,"bos_token_id":null,"eos_token_id":7,)" +
         extra + "}";
}

TEST(HfConfigTest, Qwen2AlwaysHasQkvBiasAndWindowsOnlyWhenAsked) {
  StatusOr<ModelConfig> c = read_hf_config(model_dir(
      "qwen2", qwen_config("Qwen2ForCausalLM", R"("use_sliding_window":false,"sliding_window":32768,"max_window_layers":1)")));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "qwen2");
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->bos_token_id, -1);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_TRUE(c->layer_sliding.empty());  // use_sliding_window is false
  c = read_hf_config(model_dir(
      "qwen2_swa", qwen_config("Qwen2ForCausalLM", R"("use_sliding_window":true,"sliding_window":8,"max_window_layers":1)")));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->sliding_window, 8);
  EXPECT_EQ(c->layer_sliding, (std::vector<uint8_t>{0, 1, 1}));  // from max_window_layers on
  // transformers 5 lists the layer kinds itself; they win over max_window_layers.
  c = read_hf_config(model_dir("qwen2_types", qwen_config("Qwen2ForCausalLM",
      R"("use_sliding_window":true,"sliding_window":8,"max_window_layers":1,)"
      R"("layer_types":["sliding_attention","full_attention","sliding_attention"])")));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->layer_sliding, (std::vector<uint8_t>{1, 0, 1}));
  std::string msg = error_of(model_dir("qwen2_types_bad", qwen_config("Qwen2ForCausalLM",
      R"("use_sliding_window":true,"layer_types":["sliding_attention","chunked_attention","full_attention"])")),
      StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("layer_types"), std::string::npos);
}

TEST(HfConfigTest, Qwen3HasQkNormAndBiasOnlyWhenAsked) {
  StatusOr<ModelConfig> c = read_hf_config(model_dir("qwen3", qwen_config("Qwen3ForCausalLM", R"("head_dim":32)")));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "qwen3");
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_EQ(c->head_dim, 32);
  c = read_hf_config(model_dir("qwen3_bias", qwen_config("Qwen3ForCausalLM", R"("attention_bias":true)")));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_TRUE(c->o_bias);
}

TEST(HfConfigTest, Gemma3LocalAndGlobalLayers) {
  const std::string base = R"({"architectures":["Gemma3ForCausalLM"],"hidden_size":64,"num_hidden_layers":7,)"
                           R"("num_attention_heads":4,"num_key_value_heads":1,"head_dim":32,"intermediate_size":96,)"
                           R"("max_position_embeddings":1024,"vocab_size":100,"query_pre_attn_scalar":64,)"
                           R"("sliding_window":16,"rope_theta":1000000.0,"hidden_activation":)";
  StatusOr<ModelConfig> c = read_hf_config(model_dir("gemma3", base + R"("gelu_pytorch_tanh"})"));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "gemma3");
  EXPECT_TRUE(c->tie_word_embeddings);  // Gemma's default
  EXPECT_TRUE(c->qk_norm && c->post_norms);
  EXPECT_EQ(c->activation, Activation::kGeluTanh);
  EXPECT_FLOAT_EQ(c->norm_weight_offset, 1.0f);
  EXPECT_FLOAT_EQ(c->embed_scale, 8.0f);
  EXPECT_FLOAT_EQ(c->attention_scale(), 0.125f);  // 64^-0.5, not head_dim's
  // Every sixth layer is global when the file lists no layer kinds.
  EXPECT_EQ(c->layer_sliding, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1}));
  EXPECT_FLOAT_EQ(c->rope_theta_sliding, 10000.0f);  // rope_local_base_freq's default
  EXPECT_FLOAT_EQ(c->rope_theta, 1e6f);
  std::string msg = error_of(model_dir("gemma3_gelu", base + R"("gelu"})"), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("hidden_activation"), std::string::npos);
}

TEST(HfConfigTest, FieldsThatChangeTheComputationAreReadOrRefused) {
  // Llama does not implement soft-capping: a file asking for it is refused by name.
  std::string msg =
      error_of(model_dir("softcap", llama_config(R"("final_logit_softcapping":30.0)")), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("final_logit_softcapping"), std::string::npos);
  EXPECT_NE(msg.find("llama"), std::string::npos);
  msg = error_of(model_dir("llama_swa", llama_config(R"("sliding_window":4096)")), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("sliding_window"), std::string::npos);
  // null means unset, as transformers reads it.
  EXPECT_TRUE(read_hf_config(model_dir("llama_swa_null", llama_config(R"("sliding_window":null)"))).ok());
  std::string gelu = llama_config();
  gelu.replace(gelu.find("\"silu\""), 6, "\"gelu\"");
  msg = error_of(model_dir("gelu", gelu), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("hidden_act"), std::string::npos);
}

TEST(HfConfigTest, UnknownArchitectureIsUnimplemented) {
  std::string config = llama_config();
  config.replace(config.find("LlamaForCausalLM"), 16, "GPT2LMHeadModel");
  std::string msg = error_of(model_dir("gpt2", config), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("GPT2LMHeadModel"), std::string::npos);
}

TEST(HfConfigTest, BadRopeScaling) {
  std::string msg = error_of(
      model_dir("yarn", llama_config(R"("rope_scaling":{"rope_type":"yarn","factor":4.0})")),
      StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("yarn"), std::string::npos);
  EXPECT_NE(msg.find("rope_scaling"), std::string::npos);
  msg = error_of(model_dir("rs_str", llama_config(R"("rope_scaling":"linear")")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("rope_scaling"), std::string::npos);
  msg = error_of(model_dir("rs_nofactor", llama_config(R"("rope_scaling":{"rope_type":"llama3","low_freq_factor":1})")),
                 StatusCode::kDataLoss);
  EXPECT_NE(msg.find("rope_scaling.factor"), std::string::npos);
  msg = error_of(model_dir("rs_notype", llama_config(R"("rope_scaling":{"factor":2.0})")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("rope_type"), std::string::npos);
}

TEST(HfConfigTest, WrongTypesNameTheField) {
  std::string config = llama_config();
  config.replace(config.find("\"hidden_size\":64"), 16, "\"hidden_size\":\"64\"");
  std::string msg = error_of(model_dir("hs_str", config), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("hidden_size"), std::string::npos);
  msg = error_of(model_dir("eos_str", llama_config(R"("eos_token_id":["2"])")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("eos_token_id"), std::string::npos);
  msg = error_of(model_dir("tie_str", llama_config(R"("tie_word_embeddings":"yes")")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("tie_word_embeddings"), std::string::npos);
  msg = error_of(model_dir("big", llama_config(R"("num_key_value_heads":99999999999)")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("num_key_value_heads"), std::string::npos);
  msg = error_of(model_dir("frac", llama_config(R"("num_key_value_heads":2.5)")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("num_key_value_heads"), std::string::npos);
}

TEST(HfConfigTest, MissingAndInconsistentFields) {
  std::string config = llama_config();
  const std::string field = "\"intermediate_size\":172,";
  config.replace(config.find(field), field.size(), "");
  std::string msg = error_of(model_dir("no_inter", config), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("intermediate_size"), std::string::npos);
  msg = error_of(model_dir("kv3", llama_config(R"("num_key_value_heads":3)")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("num_key_value_heads"), std::string::npos);
  msg = error_of(model_dir("eos_big", llama_config(R"("eos_token_id":512)")), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("eos_token_id"), std::string::npos);
  config = llama_config();
  config.replace(config.find("\"num_attention_heads\":8"), 23, "\"num_attention_heads\":0");
  msg = error_of(model_dir("heads0", config), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("num_attention_heads"), std::string::npos);
  msg = error_of(model_dir("act", llama_config(R"("mlp_bias":true)")), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("mlp_bias"), std::string::npos);
}

TEST(HfConfigTest, BadFiles) {
  StatusOr<ModelConfig> c = read_hf_config(test::temp_dir() + "/hf/none");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("config.json"), std::string::npos);
  error_of(model_dir("trunc", llama_config().substr(0, 40)), StatusCode::kDataLoss);
  error_of(model_dir("array", "[1,2,3]"), StatusCode::kDataLoss);
  c = read_hf_config(model_dir("badgen", llama_config(), R"({"eos_token_id":"x"})"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("generation_config.json"), std::string::npos);
  EXPECT_NE(c.status().message().find("eos_token_id"), std::string::npos);
}

}  // namespace
}  // namespace zl
