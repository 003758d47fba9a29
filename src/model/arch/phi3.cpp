// Phi-3 / Phi-3.5 / Phi-4-mini (Phi3ForCausalLM): Llama with q, k and v in one
// fused projection (qkv_proj: [q_dim + 2 kv_dim, hidden], split at load) and
// gate and up in another (gate_up_proj: [2 intermediate, hidden], gate
// first), LongRoPE scaling (longrope / su: per-frequency short and long
// factors and an attention factor on cos and sin), a partial rotary
// dimension (partial_rotary_factor, Phi-4-mini), and an optional sliding
// window on every layer. GGUF "phi3" is not read yet.
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(require_hf_silu(f));
  // transformers 4 files keep the factor at the top level; 5 in the rope dict.
  ZL_ASSIGN_OR_RETURN(float partial, f.get_float("partial_rotary_factor", 1.0f));
  if (partial != 1.0f) c.rotary_dim = static_cast<int32_t>(static_cast<float>(c.head_dim) * partial);
  return read_hf_sliding_window_all_layers(f, 0, c);
}

Status read_gguf(const GgufFields&, ModelConfig&) { return ok_status(); }

std::vector<LayerTensor> layer_tensors(const ModelConfig& c) {
  const int64_t dim = c.dim, q = c.q_dim(), kv = c.kv_dim(), hidden = c.hidden_dim;
  using L = LayerWeights;
  std::vector<LayerTensor> t;
  t.push_back(LayerTensor::norm("input_layernorm.weight", "attn_norm.weight", dim, &L::attn_norm));
  t.push_back({"self_attn.qkv_proj.weight", "attn_qkv.weight", {q + 2 * kv, dim}, nullptr,
               {{&L::wq, q}, {&L::wk, kv}, {&L::wv, kv}}, false});
  t.push_back(LayerTensor::matrix("self_attn.o_proj.weight", "attn_output.weight", dim, q, &L::wo));
  t.push_back(LayerTensor::norm("post_attention_layernorm.weight", "ffn_norm.weight", dim, &L::ffn_norm));
  t.push_back({"mlp.gate_up_proj.weight", "ffn_up.weight", {2 * hidden, dim}, nullptr,
               {{&L::w_gate, hidden}, {&L::w_up, hidden}}, false});
  t.push_back(LayerTensor::matrix("mlp.down_proj.weight", "ffn_down.weight", dim, hidden, &L::w_down));
  return t;
}

}  // namespace

extern const ArchDef kPhi3Arch = {"phi3", "Phi3ForCausalLM", nullptr, read_hf, read_gguf, layer_tensors};

}  // namespace zl
