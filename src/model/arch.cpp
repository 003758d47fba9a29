#include "model/arch.h"

#include <algorithm>
#include <cmath>
#include "model/gguf.h"

namespace zl {

// The families, one file each under model/arch/.
extern const ArchDef kLlamaArch;
extern const ArchDef kMistralArch;
extern const ArchDef kQwen2Arch;
extern const ArchDef kQwen3Arch;
extern const ArchDef kGemma2Arch;
extern const ArchDef kGemma3Arch;
extern const ArchDef kPhi3Arch;
extern const ArchDef kMixtralArch;
extern const ArchDef kQwen3MoeArch;

namespace {

constexpr const ArchDef* kArchs[] = {&kLlamaArch, &kMistralArch, &kQwen2Arch, &kQwen3Arch, &kGemma2Arch, &kGemma3Arch,
                                     &kPhi3Arch, &kMixtralArch, &kQwen3MoeArch};

template <typename Key>
const ArchDef* find_by(std::string_view name, Key key) {
  for (const ArchDef* arch : kArchs)
    if (arch->*key != nullptr && name == arch->*key) return arch;
  return nullptr;
}

template <typename Key>
std::string list_of(Key key) {
  std::string out;
  for (const ArchDef* arch : kArchs) {
    if (arch->*key == nullptr) continue;
    if (!out.empty()) out += ", ";
    out += arch->*key;
  }
  return out;
}

}  // namespace

const ArchDef* find_arch(std::string_view name) { return find_by(name, &ArchDef::name); }
const ArchDef* find_arch_by_hf_class(std::string_view name) { return find_by(name, &ArchDef::hf_class); }
const ArchDef* find_arch_by_gguf_name(std::string_view name) { return find_by(name, &ArchDef::gguf_name); }
std::string supported_hf_classes() { return list_of(&ArchDef::hf_class); }
std::string supported_gguf_names() { return list_of(&ArchDef::gguf_name); }

namespace {

// The attention's tensors every family here shares: q, k, v (with biases when
// qkv_bias), q/k norms (qk_norm), o (with a bias when o_bias).
void add_attention_tensors(const ModelConfig& c, std::vector<LayerTensor>& t) {
  const int64_t dim = c.dim, q = c.q_dim(), kv = c.kv_dim();
  using L = LayerWeights;
  t.push_back(LayerTensor::matrix("self_attn.q_proj.weight", "attn_q.weight", q, dim, &L::wq));
  t.push_back(LayerTensor::matrix("self_attn.k_proj.weight", "attn_k.weight", kv, dim, &L::wk));
  t.push_back(LayerTensor::matrix("self_attn.v_proj.weight", "attn_v.weight", kv, dim, &L::wv));
  if (c.qkv_bias) {
    t.push_back(LayerTensor::bias("self_attn.q_proj.bias", "attn_q.bias", q, &L::bq));
    t.push_back(LayerTensor::bias("self_attn.k_proj.bias", "attn_k.bias", kv, &L::bk));
    t.push_back(LayerTensor::bias("self_attn.v_proj.bias", "attn_v.bias", kv, &L::bv));
  }
  if (c.qk_norm) {
    t.push_back(LayerTensor::norm("self_attn.q_norm.weight", "attn_q_norm.weight", c.head_dim, &L::q_norm));
    t.push_back(LayerTensor::norm("self_attn.k_norm.weight", "attn_k_norm.weight", c.head_dim, &L::k_norm));
  }
  t.push_back(LayerTensor::matrix("self_attn.o_proj.weight", "attn_output.weight", dim, q, &L::wo));
  if (c.o_bias) t.push_back(LayerTensor::bias("self_attn.o_proj.bias", "attn_output.bias", dim, &L::bo));
}

// sliding_window as transformers reads it: `absent` (the family's default)
// when the field is missing, 0 (none) when it is null.
StatusOr<int32_t> read_hf_window(const HfFields& f, int32_t absent) {
  if (!f.has_key("sliding_window")) return absent;
  ZL_ASSIGN_OR_RETURN(int32_t window, f.get_i32("sliding_window", 0));
  if (window < 0) return f.refuse("sliding_window", "must be positive or null");
  return window;
}

// The gated MLP's gate, up and down projections.
void add_mlp_tensors(const ModelConfig& c, std::vector<LayerTensor>& t) {
  const int64_t dim = c.dim, hidden = c.hidden_dim;
  using L = LayerWeights;
  t.push_back(LayerTensor::matrix("mlp.gate_proj.weight", "ffn_gate.weight", hidden, dim, &L::w_gate));
  t.push_back(LayerTensor::matrix("mlp.up_proj.weight", "ffn_up.weight", hidden, dim, &L::w_up));
  t.push_back(LayerTensor::matrix("mlp.down_proj.weight", "ffn_down.weight", dim, hidden, &L::w_down));
}

// The Llama block up to its MLP: attn_norm, the attention, ffn_norm.
std::vector<LayerTensor> llama_tensors_before_mlp(const ModelConfig& c) {
  using L = LayerWeights;
  std::vector<LayerTensor> t;
  t.push_back(LayerTensor::norm("input_layernorm.weight", "attn_norm.weight", c.dim, &L::attn_norm));
  add_attention_tensors(c, t);
  t.push_back(LayerTensor::norm("post_attention_layernorm.weight", "ffn_norm.weight", c.dim, &L::ffn_norm));
  return t;
}

}  // namespace

std::vector<LayerTensor> llama_layer_tensors(const ModelConfig& c) {
  std::vector<LayerTensor> t = llama_tensors_before_mlp(c);
  add_mlp_tensors(c, t);
  return t;
}

std::vector<LayerTensor> moe_layer_tensors(const ModelConfig& c, const HfMoeNames& names) {
  using L = LayerWeights;
  using E = ExpertWeights;
  const int64_t dim = c.dim, hidden = c.expert_hidden_dim;
  std::vector<LayerTensor> t = llama_tensors_before_mlp(c);
  t.push_back(LayerTensor::matrix(names.router, "ffn_gate_inp.weight", c.num_experts, dim, &L::router));
  struct Proj {
    const char* hf;
    const char* gguf;
    int64_t rows, cols;
    LayerTensor::ExpertSlot slot;
  };
  const Proj projs[] = {{names.gate, "ffn_gate_exps.weight", hidden, dim, &E::w_gate},
                        {names.up, "ffn_up_exps.weight", hidden, dim, &E::w_up},
                        {names.down, "ffn_down_exps.weight", dim, hidden, &E::w_down}};
  for (const Proj& p : projs) {
    t.push_back(LayerTensor::stacked_experts(p.gguf, c.num_experts, p.rows, p.cols, p.slot));
    for (int32_t e = 0; e < c.num_experts; ++e)
      t.push_back(LayerTensor::expert_matrix(str_cat(names.experts, ".", e, ".", p.hf, ".weight"), e, p.rows,
                                             p.cols, p.slot));
  }
  return t;
}

Status read_gguf_experts(const GgufFields& f, const std::string& arch, ModelConfig& c) {
  ZL_ASSIGN_OR_RETURN(c.num_experts, f.get_i32(arch + ".expert_count"));
  ZL_ASSIGN_OR_RETURN(c.experts_per_token, f.get_i32(arch + ".expert_used_count"));
  ZL_ASSIGN_OR_RETURN(c.expert_hidden_dim, f.get_i32(arch + ".expert_feed_forward_length", c.hidden_dim));
  c.norm_topk_prob = true;
  return ok_status();
}

std::vector<LayerTensor> gemma_layer_tensors(const ModelConfig& c) {
  using L = LayerWeights;
  std::vector<LayerTensor> t;
  t.push_back(LayerTensor::norm("input_layernorm.weight", "attn_norm.weight", c.dim, &L::attn_norm));
  add_attention_tensors(c, t);
  // Gemma's post_attention_layernorm is the norm *after* attention; the MLP's
  // input norm is pre_feedforward_layernorm (GGUF: ffn_norm).
  t.push_back(LayerTensor::norm("post_attention_layernorm.weight", "post_attention_norm.weight", c.dim,
                                &L::post_attn_norm));
  t.push_back(LayerTensor::norm("pre_feedforward_layernorm.weight", "ffn_norm.weight", c.dim, &L::ffn_norm));
  add_mlp_tensors(c, t);
  t.push_back(
      LayerTensor::norm("post_feedforward_layernorm.weight", "post_ffw_norm.weight", c.dim, &L::post_ffn_norm));
  return t;
}

Status read_hf_gemma_common(const HfFields& f, int32_t default_pattern, ModelConfig& c) {
  // transformers' Gemma MLPs read hidden_activation; hidden_act, which some
  // files also carry, is ignored there and here.
  ZL_ASSIGN_OR_RETURN(std::string act, f.get_string("hidden_activation"));
  if (!act.empty() && act != "gelu_pytorch_tanh")
    return f.refuse("hidden_activation", "only gelu_pytorch_tanh is implemented for Gemma");
  ZL_ASSIGN_OR_RETURN(std::string unused_act, f.get_string("hidden_act"));
  (void)unused_act;
  c.activation = Activation::kGeluTanh;
  c.post_norms = true;
  c.norm_weight_offset = 1.0f;
  // transformers keeps sqrt(hidden_size) as an f32 tensor.
  c.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.dim)));
  ZL_ASSIGN_OR_RETURN(float pre_attn_scalar, f.get_float("query_pre_attn_scalar", 256.0f));
  if (!(pre_attn_scalar > 0.0f)) return f.refuse("query_pre_attn_scalar", "must be positive");
  c.attn_scale = static_cast<float>(std::pow(static_cast<double>(pre_attn_scalar), -0.5));
  ZL_ASSIGN_OR_RETURN(bool attention_bias, f.get_bool("attention_bias", false));
  c.qkv_bias = c.o_bias = attention_bias;
  ZL_ASSIGN_OR_RETURN(c.tie_word_embeddings, f.get_bool("tie_word_embeddings", true));
  ZL_ASSIGN_OR_RETURN(bool bidirectional, f.get_bool("use_bidirectional_attention", false));
  if (bidirectional) return f.refuse("use_bidirectional_attention", "only causal attention is implemented");

  ZL_ASSIGN_OR_RETURN(int32_t window, read_hf_window(f, 4096));
  ZL_ASSIGN_OR_RETURN(int32_t pattern, f.get_i32("sliding_window_pattern", default_pattern));
  if (pattern <= 0) return f.refuse("sliding_window_pattern", "must be positive");
  ZL_ASSIGN_OR_RETURN(bool listed, read_hf_layer_types(f, window, c));
  if (listed || window == 0) return ok_status();
  c.sliding_window = window;
  for (int32_t layer = 0; layer < c.num_layers; ++layer) c.layer_sliding.push_back((layer + 1) % pattern != 0 ? 1 : 0);
  return ok_status();
}

Status read_gguf_gemma_common(const GgufFields& f, const std::string& arch, const GemmaGgufRules& rules,
                              ModelConfig& c) {
  c.rope_interleaved = false;  // llama.cpp runs Gemma with NEOX-style rope
  c.activation = Activation::kGeluTanh;
  c.post_norms = true;
  c.embed_scale = std::sqrt(static_cast<float>(c.dim));  // llama.cpp: sqrtf(n_embd)
  // gemma_pytorch's query_pre_attn_scalar: head_dim, but hidden / heads for the 27B.
  const int32_t scalar = c.num_layers == rules.layers_27b ? c.dim / c.num_heads : c.head_dim;
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(scalar));
  read_gguf_biases(f, c);
  ZL_ASSIGN_OR_RETURN(c.attn_softcap, f.get_float(arch + ".attn_logit_softcapping", 0.0f));
  ZL_ASSIGN_OR_RETURN(c.final_softcap, f.get_float(arch + ".final_logit_softcapping", 0.0f));
  ZL_ASSIGN_OR_RETURN(int32_t window, f.get_i32(arch + ".attention.sliding_window", rules.default_window));
  if (window <= 0) return ok_status();
  c.sliding_window = window;
  const std::string pattern_key = arch + ".attention.sliding_window_pattern";
  if (std::optional<std::vector<uint8_t>> flags = f.get_flags(pattern_key)) {
    if (flags->size() != static_cast<size_t>(c.num_layers)) return f.type_error(pattern_key, "a flag per layer");
    c.layer_sliding = *flags;
  } else {
    ZL_ASSIGN_OR_RETURN(int32_t pattern, f.get_i32(pattern_key, rules.default_pattern));
    if (pattern < 0) return f.type_error(pattern_key, "a pattern >= 0");
    for (int32_t layer = 0; layer < c.num_layers; ++layer)
      c.layer_sliding.push_back(pattern == 0 || layer % pattern < pattern - 1 ? 1 : 0);
  }
  if (rules.local_rope) {
    ZL_ASSIGN_OR_RETURN(c.rope_theta_sliding, f.get_float(arch + ".rope.freq_base_swa", 10000.0f));
  }
  return ok_status();
}

void read_gguf_biases(const GgufFields& f, ModelConfig& c) {
  c.qkv_bias = f.has_tensor("blk.0.attn_q.bias");
  c.o_bias = f.has_tensor("blk.0.attn_output.bias");
}

Status read_hf_sliding_window_all_layers(const HfFields& f, int32_t default_window, ModelConfig& c) {
  ZL_ASSIGN_OR_RETURN(int32_t window, read_hf_window(f, default_window));
  c.sliding_window = window;
  c.layer_sliding.assign(window > 0 ? static_cast<size_t>(c.num_layers) : 0, 1);
  return ok_status();
}

StatusOr<bool> read_hf_layer_types(const HfFields& f, int32_t window, ModelConfig& c) {
  ZL_ASSIGN_OR_RETURN(std::vector<std::string> types, f.get_string_list("layer_types"));
  if (types.empty()) return false;
  if (types.size() != static_cast<size_t>(c.num_layers))
    return f.refuse("layer_types", str_cat("it lists ", types.size(), " layers, the model has ", c.num_layers));
  c.sliding_window = window;
  c.layer_sliding.clear();
  if (window == 0) return true;
  for (const std::string& type : types) {
    if (type != "full_attention" && type != "sliding_attention")
      return f.refuse("layer_types", "only full_attention and sliding_attention are implemented, not " + type);
    c.layer_sliding.push_back(type == "sliding_attention" ? 1 : 0);
  }
  if (std::find(c.layer_sliding.begin(), c.layer_sliding.end(), 1) == c.layer_sliding.end()) c.layer_sliding.clear();
  return true;
}

Status read_hf_qwen_sliding_window(const HfFields& f, ModelConfig& c) {
  ZL_ASSIGN_OR_RETURN(bool use_window, f.get_bool("use_sliding_window", false));
  ZL_ASSIGN_OR_RETURN(int32_t window, read_hf_window(f, 4096));
  if (!use_window) window = 0;
  ZL_ASSIGN_OR_RETURN(int32_t first_windowed, f.get_i32("max_window_layers", 28));
  ZL_ASSIGN_OR_RETURN(bool listed, read_hf_layer_types(f, window, c));
  if (listed || window == 0) return ok_status();
  c.sliding_window = window;
  for (int32_t layer = 0; layer < c.num_layers; ++layer) c.layer_sliding.push_back(layer >= first_windowed ? 1 : 0);
  if (first_windowed >= c.num_layers) c.layer_sliding.clear();
  return ok_status();
}

Status require_hf_silu(const HfFields& f) {
  ZL_ASSIGN_OR_RETURN(std::string act, f.get_string("hidden_act"));
  if (!act.empty() && act != "silu") return f.refuse("hidden_act", "only silu is");
  return ok_status();
}

}  // namespace zl
