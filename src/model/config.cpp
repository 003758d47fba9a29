#include "model/config.h"

namespace zl {

const char* arch_name(Arch arch) {
  switch (arch) {
    case Arch::kLlama: return "llama";
    case Arch::kMistral: return "mistral";
    case Arch::kQwen2: return "qwen2";
  }
  return "?";
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
  if (c.bos_token_id >= c.vocab_size) return bad("bos_token_id", c.bos_token_id, "is not below vocab_size");
  for (int32_t id : c.eos_token_ids)
    if (id < 0 || id >= c.vocab_size) return bad("eos_token_id", id, "is not in [0, vocab_size)");
  return ok_status();
}

int64_t config_num_params(const ModelConfig& c) {
  int64_t dim = c.dim, q = c.q_dim(), kv = c.kv_dim(), hidden = c.hidden_dim;
  int64_t per_layer = 2 * dim + dim * q + 2 * dim * kv + q * dim + 3 * dim * hidden;
  if (c.attention_bias) per_layer += q + 2 * kv;
  int64_t total = per_layer * c.num_layers + dim + int64_t{c.vocab_size} * dim;
  if (!c.tie_word_embeddings) total += int64_t{c.vocab_size} * dim;
  return total;
}

}  // namespace zl
