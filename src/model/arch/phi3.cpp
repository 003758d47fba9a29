// Phi-3 / Phi-3.5 / Phi-4-mini (Phi3ForCausalLM): Llama with q, k and v in one
// fused projection (qkv_proj: [q_dim + 2 kv_dim, hidden], split at load) and
// gate and up in another (gate_up_proj: [2 intermediate, hidden], gate
// first), LongRoPE scaling (longrope / su: per-frequency short and long
// factors and an attention factor on cos and sin), a partial rotary
// dimension (partial_rotary_factor, Phi-4-mini), and an optional sliding
// window on every layer.
//
// GGUF "phi3" (llama.cpp's converter) keeps the LongRoPE factors as tensors,
// rope_factors_long / rope_factors_short, with the attention factor and the
// original context as keys. llama.cpp reads phi3.attention.sliding_window
// and then disables the window ("Phi SWA is currently disabled"); we apply
// it, as transformers does, so past the window the two differ.
#include "model/arch.h"
#include "model/gguf.h"

namespace zl {
namespace {

constexpr const char* kLongFactors = "rope_factors_long.weight";
constexpr const char* kShortFactors = "rope_factors_short.weight";

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(require_hf_silu(f));
  // transformers 4 files keep the factor at the top level; 5 in the rope dict.
  ZL_ASSIGN_OR_RETURN(float partial, f.get_float("partial_rotary_factor", 1.0f));
  if (partial != 1.0f) c.rotary_dim = static_cast<int32_t>(static_cast<float>(c.head_dim) * partial);
  return read_hf_sliding_window_all_layers(f, 0, c);
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  c.rope_interleaved = false;  // llama.cpp runs phi3 with NEOX-style rope
  ZL_ASSIGN_OR_RETURN(c.sliding_window, f.get_i32("phi3.attention.sliding_window", 0));
  if (c.sliding_window > 0) c.layer_sliding.assign(static_cast<size_t>(c.num_layers), 1);
  RopeScaling& rs = c.rope_scaling;
  ZL_ASSIGN_OR_RETURN(rs.original_max_position_embeddings,
                      f.get_i32("phi3.rope.scaling.original_context_length", c.max_seq_len));
  ZL_ASSIGN_OR_RETURN(rs.attention_factor, f.get_float("phi3.rope.scaling.attn_factor", 1.0f));
  if (!f.has_tensor(kLongFactors) && !f.has_tensor(kShortFactors)) return ok_status();
  if (rs.type != RopeScalingType::kNone)
    return unimplemented(f.file().path, ": LongRoPE factors together with another rope scaling");
  rs.type = RopeScalingType::kLongRope;
  ZL_ASSIGN_OR_RETURN(rs.long_factor, f.get_f32_tensor(kLongFactors, c.rope_dim() / 2));
  ZL_ASSIGN_OR_RETURN(rs.short_factor, f.get_f32_tensor(kShortFactors, c.rope_dim() / 2));
  return ok_status();
}

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

extern const ArchDef kPhi3Arch = {"phi3", "Phi3ForCausalLM", "phi3", read_hf, read_gguf, layer_tensors};

}  // namespace zl
