#include "model/config.h"

#include <algorithm>
#include <cmath>

namespace zl {

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::kSilu: return "silu";
    case Activation::kGeluTanh: return "gelu_tanh";
  }
  return "?";
}

float ModelConfig::attention_scale() const {
  return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
}

Status validate_config(const ModelConfig& c, const std::string& source) {
  auto bad = [&](const char* field, auto value, const char* why) {
    return data_loss(source, ": ", field, " = ", value, ": ", why);
  };
  constexpr int32_t kMaxDim = 1 << 20;
  if (c.vocab_size <= 0 || c.vocab_size > (1 << 24)) return bad("vocab_size", c.vocab_size, "must be in [1, 16777216]");
  if (c.dim <= 0 || c.dim > kMaxDim) return bad("hidden_size", c.dim, "must be in [1, 1048576]");
  if (c.num_layers <= 0 || c.num_layers > 4096) return bad("num_hidden_layers", c.num_layers, "must be in [1, 4096]");
  if (c.num_heads <= 0 || c.num_heads > 4096) return bad("num_attention_heads", c.num_heads, "must be in [1, 4096]");
  if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0)
    return bad("num_key_value_heads", c.num_kv_heads, "must be positive and divide num_attention_heads");
  if (c.head_dim <= 0 || c.head_dim % 2 != 0 || c.head_dim > 4096)
    return bad("head_dim", c.head_dim, "must be even and in [2, 4096]");
  if (c.hidden_dim <= 0 || c.hidden_dim > 16 * kMaxDim) return bad("intermediate_size", c.hidden_dim, "must be positive");
  if (c.max_seq_len <= 0) return bad("max_position_embeddings", c.max_seq_len, "must be positive");
  if (!(c.rms_norm_eps > 0.0f && c.rms_norm_eps < 1.0f)) return bad("rms_norm_eps", c.rms_norm_eps, "must be in (0, 1)");
  if (!(c.rope_theta > 0.0f)) return bad("rope_theta", c.rope_theta, "must be positive");
  const RopeScaling& rs = c.rope_scaling;
  if (rs.type != RopeScalingType::kNone && !(rs.factor > 0.0f))
    return bad("rope_scaling.factor", rs.factor, "must be positive");
  if (rs.type == RopeScalingType::kLlama3) {
    if (!(rs.low_freq_factor > 0.0f) || !(rs.high_freq_factor > rs.low_freq_factor))
      return bad("rope_scaling.high_freq_factor", rs.high_freq_factor, "must exceed low_freq_factor > 0");
    if (rs.original_max_position_embeddings <= 0)
      return bad("rope_scaling.original_max_position_embeddings", rs.original_max_position_embeddings, "must be positive");
  }
  if (rs.type == RopeScalingType::kLongRope) {
    const size_t pairs = static_cast<size_t>(c.rope_dim() / 2);
    if (rs.short_factor.size() != pairs || rs.long_factor.size() != pairs)
      return bad("rope_scaling.short_factor", rs.short_factor.size(), "and long_factor must hold rotary_dim / 2 values");
    for (const std::vector<float>* factors : {&rs.short_factor, &rs.long_factor})
      for (float f : *factors)
        if (!(f > 0.0f) || !std::isfinite(f)) return bad("rope_scaling.long_factor", f, "factors must be positive");
    if (!(rs.attention_factor > 0.0f) || !std::isfinite(rs.attention_factor))
      return bad("rope_scaling.attention_factor", rs.attention_factor, "must be positive");
    if (rs.original_max_position_embeddings <= 0)
      return bad("rope_scaling.original_max_position_embeddings", rs.original_max_position_embeddings, "must be positive");
  }
  if (c.rotary_dim < 0 || c.rotary_dim % 2 != 0 || c.rotary_dim > c.head_dim)
    return bad("partial_rotary_factor", c.rotary_dim, "must give an even rotary dimension up to head_dim");
  if (c.sliding_window < 0) return bad("sliding_window", c.sliding_window, "must not be negative");
  if (!c.layer_sliding.empty()) {
    if (c.layer_sliding.size() != static_cast<size_t>(c.num_layers))
      return bad("layer_types", c.layer_sliding.size(), "must list one kind per layer");
    if (c.sliding_window <= 0) return bad("sliding_window", c.sliding_window, "must be positive for windowed layers");
  }
  if (!(c.embed_scale > 0.0f) || !std::isfinite(c.embed_scale)) return bad("embed_scale", c.embed_scale, "must be positive");
  if (!(c.attn_scale >= 0.0f) || !std::isfinite(c.attn_scale))
    return bad("query_pre_attn_scalar", c.attn_scale, "must give a positive scale");
  if (!(c.attn_softcap >= 0.0f)) return bad("attn_logit_softcapping", c.attn_softcap, "must be positive or null");
  if (!(c.final_softcap >= 0.0f)) return bad("final_logit_softcapping", c.final_softcap, "must be positive or null");
  if (!(c.rope_theta_sliding >= 0.0f)) return bad("rope_local_base_freq", c.rope_theta_sliding, "must be positive");
  if (c.num_experts < 0 || c.num_experts > 4096) return bad("num_experts", c.num_experts, "must be in [0, 4096]");
  if (c.is_moe()) {
    if (c.experts_per_token <= 0 || c.experts_per_token > c.num_experts)
      return bad("num_experts_per_tok", c.experts_per_token, "must be in [1, num_experts]");
    if (c.expert_hidden_dim <= 0 || c.expert_hidden_dim > 16 * kMaxDim)
      return bad("moe_intermediate_size", c.expert_hidden_dim, "must be positive");
  }
  if (c.bos_token_id >= c.vocab_size) return bad("bos_token_id", c.bos_token_id, "is not below vocab_size");
  for (int32_t id : c.eos_token_ids)
    if (id < 0 || id >= c.vocab_size) return bad("eos_token_id", id, "is not in [0, vocab_size)");
  return ok_status();
}

std::vector<std::string> recipe_features(const ModelConfig& c) {
  std::vector<std::string> features;
  if (c.qkv_bias) features.emplace_back("qkv_bias");
  if (c.o_bias) features.emplace_back("o_bias");
  if (c.qk_norm) features.emplace_back("qk_norm");
  if (c.post_norms) features.emplace_back("post_norms");
  if (c.rotary_dim > 0 && c.rotary_dim != c.head_dim) features.emplace_back("partial_rotary");
  if (c.rope_scaling.type == RopeScalingType::kLongRope) features.emplace_back("longrope");
  if (c.activation != Activation::kSilu) features.emplace_back(activation_name(c.activation));
  if (c.embed_scale != 1.0f) features.emplace_back("embed_scale");
  if (c.attn_scale > 0.0f) features.emplace_back("attn_scale");
  if (c.attn_softcap > 0.0f) features.emplace_back("attn_softcap");
  if (c.final_softcap > 0.0f) features.emplace_back("final_softcap");
  if (!c.layer_sliding.empty()) features.emplace_back("sliding_window");
  if (c.rope_theta_sliding > 0.0f) features.emplace_back("sliding_rope_theta");
  if (c.is_moe()) features.emplace_back("moe");
  return features;
}

Status require_features(const ModelConfig& c, const std::vector<std::string>& supported, const std::string& who) {
  for (const std::string& feature : recipe_features(c))
    if (std::find(supported.begin(), supported.end(), feature) == supported.end())
      return unimplemented(who, " does not implement ", feature, " (architecture ", c.arch, ")");
  return ok_status();
}

}  // namespace zl
