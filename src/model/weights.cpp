#include "model/weights.h"

#include <cstdint>

namespace zl {
namespace {

// One per-layer tensor: its names in both formats, where it goes, its shape.
struct LayerRole {
  const char* hf_suffix;
  const char* gguf_suffix;
  const float* LayerWeights::*field;
  int64_t rows_of;  // index into the dims table below
  int64_t cols_of;  // -1 for a vector
  bool bias;        // only present with attention_bias
};

enum Dim : int64_t { kDim, kQDim, kKvDim, kHidden };

constexpr LayerRole kLayerRoles[] = {
    {"input_layernorm.weight", "attn_norm.weight", &LayerWeights::attn_norm, kDim, -1, false},
    {"self_attn.q_proj.weight", "attn_q.weight", &LayerWeights::wq, kQDim, kDim, false},
    {"self_attn.k_proj.weight", "attn_k.weight", &LayerWeights::wk, kKvDim, kDim, false},
    {"self_attn.v_proj.weight", "attn_v.weight", &LayerWeights::wv, kKvDim, kDim, false},
    {"self_attn.q_proj.bias", "attn_q.bias", &LayerWeights::bq, kQDim, -1, true},
    {"self_attn.k_proj.bias", "attn_k.bias", &LayerWeights::bk, kKvDim, -1, true},
    {"self_attn.v_proj.bias", "attn_v.bias", &LayerWeights::bv, kKvDim, -1, true},
    {"self_attn.o_proj.weight", "attn_output.weight", &LayerWeights::wo, kDim, kQDim, false},
    {"post_attention_layernorm.weight", "ffn_norm.weight", &LayerWeights::ffn_norm, kDim, -1, false},
    {"mlp.gate_proj.weight", "ffn_gate.weight", &LayerWeights::w_gate, kHidden, kDim, false},
    {"mlp.up_proj.weight", "ffn_up.weight", &LayerWeights::w_up, kHidden, kDim, false},
    {"mlp.down_proj.weight", "ffn_down.weight", &LayerWeights::w_down, kDim, kHidden, false},
};

struct GlobalNames {
  const char* embed;
  const char* norm;
  const char* lm_head;
};

GlobalNames global_names(TensorNaming naming) {
  if (naming == TensorNaming::kGguf) return {"token_embd.weight", "output_norm.weight", "output.weight"};
  return {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"};
}

std::string layer_tensor_name(TensorNaming naming, int layer, const LayerRole& role) {
  if (naming == TensorNaming::kGguf) return str_cat("blk.", layer, ".", role.gguf_suffix);
  return str_cat("model.layers.", layer, ".", role.hf_suffix);
}

std::vector<int64_t> role_shape(const ModelConfig& c, const LayerRole& role) {
  const int64_t dims[] = {c.dim, c.q_dim(), c.kv_dim(), c.hidden_dim};
  if (role.cols_of < 0) return {dims[role.rows_of]};
  return {dims[role.rows_of], dims[role.cols_of]};
}

// Returns an f32 view of the tensor: in place when it is f32 and aligned,
// otherwise a converted copy owned by `weights`.
const float* tensor_as_f32(const TensorInfo& info, ModelWeights& weights) {
  if (info.dtype == DType::kF32 && reinterpret_cast<uintptr_t>(info.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(info.data);
  float* dst = weights.allocate(info.num_elements());
  dtype_to_f32(info.dtype, info.data, dst, info.num_elements());
  return dst;
}

}  // namespace

float* ModelWeights::allocate(int64_t num_elems) {
  owned.emplace_back(new float[static_cast<size_t>(num_elems)]);
  return owned.back().get();
}

std::vector<TensorSpec> expected_tensors(const ModelConfig& c, TensorNaming naming) {
  GlobalNames g = global_names(naming);
  std::vector<TensorSpec> specs;
  specs.push_back({g.embed, {c.vocab_size, c.dim}, true});
  for (int layer = 0; layer < c.num_layers; ++layer)
    for (const LayerRole& role : kLayerRoles)
      if (!role.bias || c.attention_bias)
        specs.push_back({layer_tensor_name(naming, layer, role), role_shape(c, role), true});
  specs.push_back({g.norm, {c.dim}, true});
  if (!c.tie_word_embeddings) specs.push_back({g.lm_head, {c.vocab_size, c.dim}, true});
  return specs;
}

Status check_tensors(const ModelConfig& config, const TensorIndex& tensors, TensorNaming naming,
                     const std::string& source) {
  for (const TensorSpec& spec : expected_tensors(config, naming)) {
    auto it = tensors.find(spec.name);
    if (it == tensors.end()) {
      if (spec.required) return data_loss(source, ": tensor ", spec.name, " is missing");
      continue;
    }
    if (it->second.shape != spec.shape)
      return data_loss(source, ": tensor ", spec.name, " has shape ", shape_to_string(it->second.shape),
                       ", expected ", shape_to_string(spec.shape), " from the model config");
  }
  return ok_status();
}

StatusOr<ModelWeights> load_weights(const ModelConfig& c, const TensorIndex& tensors,
                                    TensorNaming naming, const std::string& source,
                                    const std::function<void(int, int)>& progress) {
  ZL_RETURN_IF_ERROR(check_tensors(c, tensors, naming, source));
  ModelWeights w;
  std::vector<TensorSpec> specs = expected_tensors(c, naming);
  int done = 0, total = static_cast<int>(specs.size());
  auto get = [&](const std::string& name) {
    const TensorInfo& info = tensors.at(name);
    if (info.file) {
      bool known = false;
      for (const auto& f : w.files) known |= f == info.file;
      if (!known) w.files.push_back(info.file);
    }
    const float* p = tensor_as_f32(info, w);
    if (progress) progress(++done, total);
    return p;
  };
  GlobalNames g = global_names(naming);
  w.tok_embeddings = get(g.embed);
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int layer = 0; layer < c.num_layers; ++layer)
    for (const LayerRole& role : kLayerRoles)
      if (!role.bias || c.attention_bias)
        w.layers[static_cast<size_t>(layer)].*role.field = get(layer_tensor_name(naming, layer, role));
  w.final_norm = get(g.norm);
  w.lm_head = c.tie_word_embeddings ? w.tok_embeddings : get(g.lm_head);
  return w;
}

}  // namespace zl
