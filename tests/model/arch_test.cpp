// The architecture seam (model/arch.h): the registry, the tensor list each
// family's recipe reads, the refusal of any tensor it would leave unread,
// and backends refusing recipe steps they do not implement.
#include "model/arch.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/dummy.h"
#include "model/gguf_export.h"
#include "model/llama_cuda.h"

namespace zl {
namespace {

ModelConfig tiny_config(const std::string& arch) {
  StatusOr<ModelConfig> c = dummy_config("tiny");
  EXPECT_TRUE(c.ok());
  c->arch = arch;
  return *c;
}

// An index holding exactly the tensors `config` expects (f32, no data behind them).
TensorIndex index_for(const ModelConfig& config, TensorNaming naming) {
  TensorIndex index;
  for (const TensorSpec& spec : expected_tensors(config, naming)) {
    TensorInfo info;
    info.name = spec.name;
    info.shape = spec.shape;
    index.emplace(spec.name, info);
  }
  return index;
}

TEST(ArchTest, RegistryFindsEachFamilyByEveryName) {
  for (const char* name : {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"}) {
    const ArchDef* arch = find_arch(name);
    ASSERT_NE(arch, nullptr) << name;
    EXPECT_EQ(find_arch_by_hf_class(arch->hf_class), arch);
    if (arch->gguf_name != nullptr) {
      EXPECT_EQ(find_arch_by_gguf_name(arch->gguf_name), arch);
    }
    EXPECT_NE(supported_hf_classes().find(arch->hf_class), std::string::npos);
  }
  EXPECT_EQ(find_arch_by_hf_class("GPT2LMHeadModel"), nullptr);
  EXPECT_EQ(find_arch_by_gguf_name("mistral"), nullptr);  // llama.cpp writes Mistral 7B as "llama"
  EXPECT_NE(supported_gguf_names().find("qwen3"), std::string::npos);
}

TEST(ArchTest, RecipeDecidesTheTensors) {
  ModelConfig c = tiny_config("qwen3");
  c.qk_norm = true;
  c.qkv_bias = c.o_bias = true;
  std::vector<std::string> names;
  for (const TensorSpec& spec : expected_tensors(c, TensorNaming::kHuggingFace)) names.push_back(spec.name);
  for (const char* want : {"model.layers.0.self_attn.q_norm.weight", "model.layers.3.self_attn.k_norm.weight",
                           "model.layers.1.self_attn.o_proj.bias", "model.layers.2.self_attn.v_proj.bias"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  const std::vector<TensorSpec> gguf = expected_tensors(c, TensorNaming::kGguf);
  bool found = false;
  for (const TensorSpec& spec : gguf) {
    if (spec.name != "blk.0.attn_q_norm.weight") continue;
    found = true;
    EXPECT_EQ(spec.shape, (std::vector<int64_t>{c.head_dim}));
  }
  EXPECT_TRUE(found);
  // Phi-3's fused projections are one tensor each, split into row ranges at load.
  ModelConfig phi3 = tiny_config("phi3");
  std::vector<std::string> phi3_names;
  for (const TensorSpec& spec : expected_tensors(phi3, TensorNaming::kHuggingFace)) {
    phi3_names.push_back(spec.name);
    if (spec.name == "model.layers.0.self_attn.qkv_proj.weight") {
      EXPECT_EQ(spec.shape, (std::vector<int64_t>{phi3.q_dim() + 2 * phi3.kv_dim(), phi3.dim}));
    }
    if (spec.name == "model.layers.0.mlp.gate_up_proj.weight") {
      EXPECT_EQ(spec.shape, (std::vector<int64_t>{2 * phi3.hidden_dim, phi3.dim}));
    }
  }
  EXPECT_EQ(std::count(phi3_names.begin(), phi3_names.end(), "model.layers.0.self_attn.qkv_proj.weight"), 1);
  EXPECT_EQ(std::count(phi3_names.begin(), phi3_names.end(), "model.layers.0.self_attn.q_proj.weight"), 0);
  // The parameter count follows the same list: the q/k norms add 2 x head_dim a layer.
  ModelConfig plain = tiny_config("qwen3");
  plain.qk_norm = true;
  ModelConfig no_norm = plain;
  no_norm.arch = "llama";
  no_norm.qk_norm = false;
  EXPECT_EQ(config_num_params(plain) - config_num_params(no_norm), int64_t{2} * c.head_dim * c.num_layers);
}

TEST(ArchTest, TensorsTheRecipeWouldNotReadAreRefused) {
  // A Llama checkpoint with an o_proj bias its config does not announce:
  // loading it without the bias would give wrong logits with `check: ok`.
  ModelConfig c = tiny_config("llama");
  TensorIndex index = index_for(c, TensorNaming::kHuggingFace);
  ASSERT_TRUE(check_tensors(c, index, TensorNaming::kHuggingFace, "m").ok());
  TensorInfo bias;
  bias.name = "model.layers.0.self_attn.o_proj.bias";
  bias.shape = {c.dim};
  index.emplace(bias.name, bias);
  Status s = check_tensors(c, index, TensorNaming::kHuggingFace, "m");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("o_proj.bias"), std::string::npos) << s.message();
  // Once the recipe has the bias (attention_bias: true) it is read.
  c.o_bias = c.qkv_bias = true;
  EXPECT_TRUE(check_tensors(c, index_for(c, TensorNaming::kHuggingFace), TensorNaming::kHuggingFace, "m").ok());
  // transformers 4.3x's saved rope buffers are recomputed, not refused.
  index = index_for(c, TensorNaming::kHuggingFace);
  TensorInfo inv_freq;
  inv_freq.name = "model.layers.0.self_attn.rotary_emb.inv_freq";
  inv_freq.shape = {c.head_dim / 2};
  index.emplace(inv_freq.name, inv_freq);
  EXPECT_TRUE(check_tensors(c, index, TensorNaming::kHuggingFace, "m").ok());
}

TEST(ArchTest, BackendsRefuseRecipeStepsTheyLack) {
  ModelConfig c = tiny_config("qwen3");
  c.qk_norm = true;
  EXPECT_EQ(recipe_features(c), (std::vector<std::string>{"qk_norm"}));
  Status s = cuda_supports(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("qk_norm"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("qwen3"), std::string::npos) << s.message();
  // create() refuses before it looks for a device, the same with and without CUDA.
  ModelWeights none;
  auto model = CudaLlamaModel::create(c, none, {});
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("qk_norm"), std::string::npos) << model.status().message();
  Status written = write_gguf("/nonexistent/x.gguf", c, none, byte_tokenizer_gguf_vocab(c.vocab_size), "x");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("qk_norm"), std::string::npos) << written.message();

  ModelConfig qwen2 = tiny_config("qwen2");
  qwen2.qkv_bias = true;
  EXPECT_TRUE(cuda_supports(qwen2).ok());
  qwen2.sliding_window = 8;
  qwen2.layer_sliding.assign(static_cast<size_t>(qwen2.num_layers), 1);
  EXPECT_FALSE(cuda_supports(qwen2).ok());
}

}  // namespace
}  // namespace zl
