#include "model/hf_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/mapped_file.h"
#include "model/arch.h"
#include "model/config_fields.h"
#include "model/json_util.h"

namespace zl {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxConfigBytes = 16ull << 20;

// Fields of transformers' configs that change what a model computes. After
// the architecture file has read its own, any of these still unread and not
// null is refused by name: a field nobody implements must not be ignored.
constexpr const char* kComputeFields[] = {
    "attention_bias", "mlp_bias", "hidden_act", "hidden_activation", "sliding_window", "use_sliding_window",
    "max_window_layers", "layer_types", "attn_logit_softcapping", "final_logit_softcapping",
    "query_pre_attn_scalar", "partial_rotary_factor", "rope_local_base_freq", "sliding_window_pattern",
    "use_qk_norm", "qk_layernorm", "num_experts", "num_local_experts", "num_experts_per_tok",
    "moe_intermediate_size", "shared_expert_intermediate_size", "norm_topk_prob", "decoder_sparse_step",
    "mlp_only_layers", "embedding_multiplier", "logits_scaling",
    "residual_multiplier", "attention_multiplier", "clip_qkv", "use_parallel_residual", "no_rope_layers",
    "attention_chunk_size"};

StatusOr<const ArchDef*> read_arch(const HfFields& r, std::string* source_arch) {
  const json* archs = r.find("architectures");
  if (archs == nullptr) return r.missing("architectures");
  if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    return r.type_error("architectures", "a non-empty list of strings", *archs);
  *source_arch = (*archs)[0].get<std::string>();
  const ArchDef* arch = find_arch_by_hf_class(*source_arch);
  if (arch == nullptr)
    return unimplemented(r.source(), ": architecture \"", *source_arch, "\" is not supported (",
                         supported_hf_classes(), " are)");
  return arch;
}

Status read_shape(const HfFields& r, ModelConfig* c) {
  ZL_ASSIGN_OR_RETURN(c->vocab_size, r.get_i32("vocab_size"));
  ZL_ASSIGN_OR_RETURN(c->dim, r.get_i32("hidden_size"));
  ZL_ASSIGN_OR_RETURN(c->num_layers, r.get_i32("num_hidden_layers"));
  ZL_ASSIGN_OR_RETURN(c->num_heads, r.get_i32("num_attention_heads"));
  ZL_ASSIGN_OR_RETURN(c->num_kv_heads, r.get_i32("num_key_value_heads", c->num_heads));
  ZL_ASSIGN_OR_RETURN(c->hidden_dim, r.get_i32("intermediate_size"));
  ZL_ASSIGN_OR_RETURN(c->max_seq_len, r.get_i32("max_position_embeddings"));
  ZL_ASSIGN_OR_RETURN(c->rms_norm_eps, r.get_float("rms_norm_eps", 1e-6f));
  // head_dim may be absent or null; the default needs heads to divide hidden.
  if (c->num_heads <= 0)
    return data_loss(r.source(), ": field \"num_attention_heads\" = ", c->num_heads, ": must be positive");
  if (r.find("head_dim") == nullptr && c->dim % c->num_heads != 0)
    return data_loss(r.source(), ": field \"hidden_size\" = ", c->dim,
                     " is not divisible by num_attention_heads = ", c->num_heads);
  ZL_ASSIGN_OR_RETURN(c->head_dim, r.get_i32("head_dim", c->dim / c->num_heads));
  return ok_status();
}

// LongRoPE ("su" in older Phi-3 files), as transformers'
// _compute_longrope_parameters reads it: the original context from the rope
// dict or the top level, factor = max_position_embeddings / original when
// absent, and the attention factor sqrt(1 + ln(factor) / ln(original)).
Status read_longrope(const HfFields& top, const HfFields& s, ModelConfig* c) {
  RopeScaling& out = c->rope_scaling;
  out.type = RopeScalingType::kLongRope;
  ZL_ASSIGN_OR_RETURN(out.short_factor, s.get_float_list("short_factor"));
  ZL_ASSIGN_OR_RETURN(out.long_factor, s.get_float_list("long_factor"));
  ZL_ASSIGN_OR_RETURN(int32_t top_original, top.get_i32("original_max_position_embeddings", c->max_seq_len));
  ZL_ASSIGN_OR_RETURN(out.original_max_position_embeddings, s.get_i32("original_max_position_embeddings", top_original));
  if (out.original_max_position_embeddings <= 0) return s.refuse("original_max_position_embeddings", "must be positive");
  const double original = out.original_max_position_embeddings;
  ZL_ASSIGN_OR_RETURN(float factor, s.get_float("factor", static_cast<float>(c->max_seq_len / original)));
  out.factor = factor;
  const double default_attention = factor <= 1.0f ? 1.0 : std::sqrt(1.0 + std::log(double{factor}) / std::log(original));
  ZL_ASSIGN_OR_RETURN(out.attention_factor, s.get_float("attention_factor", static_cast<float>(default_attention)));
  return ok_status();
}

Status read_rope_scaling(const HfFields& r, const char* key, ModelConfig* c) {
  const json* rs = r.find(key);
  if (rs == nullptr) return ok_status();
  if (!rs->is_object()) return r.type_error(key, "an object or null", *rs);
  HfFields s(*rs, r.source(), std::string(key) + ".");
  ZL_ASSIGN_OR_RETURN(std::string type, s.get_string("rope_type"));
  if (type.empty()) {
    ZL_ASSIGN_OR_RETURN(type, s.get_string("type"));
  }
  RopeScaling& out = c->rope_scaling;
  if (type == "default") {
    out.type = RopeScalingType::kNone;
  } else if (type == "linear") {
    out.type = RopeScalingType::kLinear;
    ZL_ASSIGN_OR_RETURN(out.factor, s.get_float("factor"));
  } else if (type == "llama3") {
    out.type = RopeScalingType::kLlama3;
    ZL_ASSIGN_OR_RETURN(out.factor, s.get_float("factor"));
    ZL_ASSIGN_OR_RETURN(out.low_freq_factor, s.get_float("low_freq_factor"));
    ZL_ASSIGN_OR_RETURN(out.high_freq_factor, s.get_float("high_freq_factor"));
    ZL_ASSIGN_OR_RETURN(out.original_max_position_embeddings, s.get_i32("original_max_position_embeddings"));
  } else if (type == "longrope" || type == "su") {
    ZL_RETURN_IF_ERROR(read_longrope(r, s, c));
  } else if (type.empty()) {
    return data_loss(r.source(), ": field \"", key, "\" has neither \"rope_type\" nor \"type\"");
  } else {
    return unimplemented(r.source(), ": field \"", key, ".rope_type\" = \"", type,
                         "\" is not supported (default, linear, llama3, longrope are)");
  }
  // transformers 5 keeps Phi-3's partial rotary factor in the rope dict.
  ZL_ASSIGN_OR_RETURN(float partial, s.get_float("partial_rotary_factor", 1.0f));
  if (partial != 1.0f) c->rotary_dim = static_cast<int32_t>(static_cast<float>(c->head_dim) * partial);
  return ok_status();
}

// transformers 5 may give each layer kind its own rope ({"full_attention":
// {...}, "sliding_attention": {...}}, Gemma 3): the full layers' is the
// model's rope; the sliding layers' may only change the base.
Status read_rope_per_layer_kind(const HfFields& r, const json& params, ModelConfig* c) {
  HfFields kinds(params, r.source(), "rope_parameters.");
  for (auto& [kind, value] : params.items())
    if (kind != "full_attention" && kind != "sliding_attention")
      return kinds.refuse(kind.c_str(), "only full_attention and sliding_attention rope are implemented");
  if (kinds.find("full_attention") != nullptr) {
    ZL_RETURN_IF_ERROR(read_rope_scaling(kinds, "full_attention", c));
    HfFields full(params["full_attention"], r.source(), "rope_parameters.full_attention.");
    ZL_ASSIGN_OR_RETURN(c->rope_theta, full.get_float("rope_theta", c->rope_theta));
  }
  if (const json* sliding = kinds.find("sliding_attention")) {
    ModelConfig local;
    ZL_RETURN_IF_ERROR(read_rope_scaling(kinds, "sliding_attention", &local));
    if (local.rope_scaling.type != RopeScalingType::kNone)
      return kinds.refuse("sliding_attention", "scaled rope on sliding layers is not implemented");
    HfFields fields(*sliding, r.source(), "rope_parameters.sliding_attention.");
    ZL_ASSIGN_OR_RETURN(c->rope_theta_sliding, fields.get_float("rope_theta", 10000.0f));
  }
  return ok_status();
}

Status read_rope(const HfFields& r, ModelConfig* c) {
  ZL_ASSIGN_OR_RETURN(c->rope_theta, r.get_float("rope_theta", 10000.0f));
  ZL_RETURN_IF_ERROR(read_rope_scaling(r, "rope_scaling", c));
  // transformers >= 5 folds rope_theta and the scaling into rope_parameters.
  const json* params = r.find("rope_parameters");
  if (params == nullptr || r.find("rope_scaling") != nullptr) return ok_status();
  if (params->is_object() && (params->contains("full_attention") || params->contains("sliding_attention")))
    return read_rope_per_layer_kind(r, *params, c);
  ZL_RETURN_IF_ERROR(read_rope_scaling(r, "rope_parameters", c));
  HfFields p(*params, r.source(), "rope_parameters.");
  if (r.find("rope_theta") == nullptr) {
    ZL_ASSIGN_OR_RETURN(c->rope_theta, p.get_float("rope_theta", 10000.0f));
  }
  return ok_status();
}

Status read_special_ids(const HfFields& r, ModelConfig* c) {
  ZL_ASSIGN_OR_RETURN(c->bos_token_id, r.get_i32("bos_token_id", c->bos_token_id));
  ZL_ASSIGN_OR_RETURN(std::vector<int32_t> eos, r.get_id_list("eos_token_id"));
  for (int32_t id : eos)
    if (std::find(c->eos_token_ids.begin(), c->eos_token_ids.end(), id) == c->eos_token_ids.end())
      c->eos_token_ids.push_back(id);
  return ok_status();
}

Status read_generation_config(const std::string& dir, ModelConfig* c) {
  const std::string path = dir + "/generation_config.json";
  if (!file_exists(path)) return ok_status();
  ZL_ASSIGN_OR_RETURN(json gen, read_json_file(path, kMaxConfigBytes));
  if (!gen.is_object()) return data_loss(path, ": top level is ", json_type_name(gen), ", not an object");
  return read_special_ids(HfFields(gen, path), c);
}

Status refuse_unread_compute_fields(const HfFields& r, const ModelConfig& c) {
  for (const char* key : kComputeFields) {
    if (r.read_keys().count(key) != 0) continue;
    auto it = r.object().find(key);
    if (it == r.object().end() || it->is_null()) continue;
    return r.refuse(key, str_cat("the ", c.arch, " architecture does not implement it"));
  }
  return ok_status();
}

}  // namespace

StatusOr<ModelConfig> read_hf_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  ZL_ASSIGN_OR_RETURN(json root, read_json_file(path, kMaxConfigBytes));
  if (!root.is_object()) return data_loss(path, ": top level is ", json_type_name(root), ", not an object");
  HfFields r(root, path);

  ModelConfig c;
  ZL_ASSIGN_OR_RETURN(const ArchDef* arch, read_arch(r, &c.source_arch));
  c.arch = arch->name;
  ZL_RETURN_IF_ERROR(read_shape(r, &c));
  ZL_RETURN_IF_ERROR(read_rope(r, &c));
  c.rope_interleaved = false;  // transformers' rotate_half
  ZL_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.get_bool("tie_word_embeddings", false));
  ZL_RETURN_IF_ERROR(read_special_ids(r, &c));
  ZL_RETURN_IF_ERROR(read_generation_config(dir, &c));
  ZL_RETURN_IF_ERROR(arch->read_hf(r, c));
  ZL_RETURN_IF_ERROR(refuse_unread_compute_fields(r, c));
  ZL_RETURN_IF_ERROR(validate_config(c, path));
  return c;
}

}  // namespace zl
