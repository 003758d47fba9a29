// GgufValue accessors, and the model shape from GGUF metadata
// (gguf_model_config); the tokenizer's part is bundle/gguf_vocab.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/arch.h"
#include "model/config_fields.h"
#include "model/gguf.h"

namespace zl {

std::optional<int64_t> GgufValue::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&value)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&value)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (const auto* b = std::get_if<bool>(&value)) return *b;
  return std::nullopt;
}

const std::string* GgufValue::as_string() const { return std::get_if<std::string>(&value); }

const std::vector<std::string>* GgufValue::as_string_array() const {
  return std::get_if<std::vector<std::string>>(&value);
}

const std::vector<double>* GgufValue::as_float_array() const {
  return std::get_if<std::vector<double>>(&value);
}

std::optional<std::vector<int64_t>> GgufValue::as_int_array() const {
  if (const auto* i = std::get_if<std::vector<int64_t>>(&value)) return *i;
  const auto* u = std::get_if<std::vector<uint64_t>>(&value);
  if (u == nullptr) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(u->size());
  for (uint64_t x : *u) {
    if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    out.push_back(static_cast<int64_t>(x));
  }
  return out;
}

size_t GgufValue::size() const {
  if (type != GgufType::kArray) return 1;
  return std::visit([](const auto& v) -> size_t {
    if constexpr (requires { v.size(); } && !std::is_same_v<std::decay_t<decltype(v)>, std::string>)
      return v.size();
    else
      return 1;
  }, value);
}

namespace {

// {arch}.* keys that change what a model computes. Any of them present and
// unread by the architecture file is refused by name (as hf_config.cpp does).
constexpr const char* kComputeKeySuffixes[] = {
    ".attention.sliding_window", ".attn_logit_softcapping", ".final_logit_softcapping", ".expert_count",
    ".expert_used_count", ".expert_shared_count", ".attention.clamp_kqv", ".attention.layer_norm_epsilon",
    ".rope.dimension_sections", ".attention.scale", ".embedding_scale", ".residual_scale", ".logit_scale",
    ".attention.q_lora_rank", ".attention.kv_lora_rank", ".use_parallel_residual", ".rope.freq_base_swa",
    ".attention.sliding_window_pattern"};

Status refuse_unread_compute_keys(const GgufFields& r, const std::string& arch) {
  for (const char* suffix : kComputeKeySuffixes) {
    std::string key = arch + suffix;
    if (r.read_keys().count(key) != 0 || r.file().find(key) == nullptr) continue;
    return unimplemented(r.file().path, ": key ", key, " is not supported (the ", arch,
                         " architecture does not implement it)");
  }
  return ok_status();
}

Status read_llm_shape(const GgufFields& r, const GgufFile& g, const std::string& a, ModelConfig* c) {
  ZL_ASSIGN_OR_RETURN(c->max_seq_len, r.get_i32(a + ".context_length"));
  ZL_ASSIGN_OR_RETURN(c->dim, r.get_i32(a + ".embedding_length"));
  ZL_ASSIGN_OR_RETURN(c->num_layers, r.get_i32(a + ".block_count"));
  ZL_ASSIGN_OR_RETURN(c->hidden_dim, r.get_i32(a + ".feed_forward_length"));
  ZL_ASSIGN_OR_RETURN(c->num_heads, r.get_i32(a + ".attention.head_count"));
  ZL_ASSIGN_OR_RETURN(c->num_kv_heads, r.get_i32(a + ".attention.head_count_kv", c->num_heads));
  ZL_ASSIGN_OR_RETURN(c->rms_norm_eps, r.get_float(a + ".attention.layer_norm_rms_epsilon"));
  if (c->num_heads <= 0)
    return data_loss(g.path, ": key ", a, ".attention.head_count = ", c->num_heads, ": must be positive");
  // As llama.cpp: head_dim is key_length, else dim / heads; rope turns the
  // first rope.dimension_count dimensions of each head (all by default).
  ZL_ASSIGN_OR_RETURN(c->head_dim, r.get_i32(a + ".attention.key_length", c->dim / c->num_heads));
  ZL_ASSIGN_OR_RETURN(int32_t value_dim, r.get_i32(a + ".attention.value_length", c->head_dim));
  if (value_dim != c->head_dim)
    return unimplemented(g.path, ": key ", a, ".attention.value_length = ", value_dim,
                         " differs from key_length ", c->head_dim);
  ZL_ASSIGN_OR_RETURN(int32_t rope_dims, r.get_i32(a + ".rope.dimension_count", c->head_dim));
  if (rope_dims <= 0 || rope_dims > c->head_dim || rope_dims % 2 != 0)
    return data_loss(g.path, ": key ", a, ".rope.dimension_count = ", rope_dims, ": must be even and in (0, head_dim ",
                     c->head_dim, "]");
  if (rope_dims != c->head_dim) c->rotary_dim = rope_dims;
  return ok_status();
}

Status read_rope(const GgufFields& r, const GgufFile& g, const std::string& a, ModelConfig* c) {
  ZL_ASSIGN_OR_RETURN(c->rope_theta, r.get_float(a + ".rope.freq_base", 10000.0f));
  ZL_ASSIGN_OR_RETURN(std::string type, r.get_string(a + ".rope.scaling.type"));
  ZL_ASSIGN_OR_RETURN(float legacy_linear, r.get_float(a + ".rope.scale_linear", 1.0f));
  if (type.empty() && legacy_linear != 1.0f) {
    c->rope_scaling.type = RopeScalingType::kLinear;
    c->rope_scaling.factor = legacy_linear;
  } else if (type == "linear") {
    c->rope_scaling.type = RopeScalingType::kLinear;
    ZL_ASSIGN_OR_RETURN(c->rope_scaling.factor, r.get_float(a + ".rope.scaling.factor"));
  } else if (!type.empty() && type != "none") {
    return unimplemented(g.path, ": key ", a, ".rope.scaling.type = \"", type,
                         "\" is not supported (none, linear are)");
  }
  // Llama 3.1-style scaling is baked by llama.cpp into per-dimension divisors
  // in rope_freqs.weight, which ModelConfig cannot express yet.
  if (g.tensors.count("rope_freqs.weight") != 0)
    return unimplemented(g.path, ": tensor rope_freqs.weight (llama3 rope scaling factors) is not supported");
  return ok_status();
}

Status read_special_ids(const GgufFields& r, ModelConfig* c) {
  ZL_ASSIGN_OR_RETURN(c->bos_token_id, r.get_token_id("tokenizer.ggml.bos_token_id"));
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    ZL_ASSIGN_OR_RETURN(int32_t id, r.get_token_id(key));
    if (id >= 0 && std::find(c->eos_token_ids.begin(), c->eos_token_ids.end(), id) == c->eos_token_ids.end())
      c->eos_token_ids.push_back(id);
  }
  return ok_status();
}

StatusOr<int32_t> read_vocab_size(const GgufFields& r, const GgufFile& g, const std::string& a) {
  if (const GgufValue* tokens = g.find("tokenizer.ggml.tokens")) {
    if (tokens->as_string_array() == nullptr) return r.type_error("tokenizer.ggml.tokens", "an array of strings");
    if (tokens->size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      return data_loss(g.path, ": key tokenizer.ggml.tokens has too many entries");
    return static_cast<int32_t>(tokens->size());
  }
  if (g.find(a + ".vocab_size") != nullptr) return r.get_i32(a + ".vocab_size");
  auto embd = g.tensors.find("token_embd.weight");
  if (embd != g.tensors.end() && embd->second.shape.size() == 2 &&
      embd->second.shape[0] <= std::numeric_limits<int32_t>::max())
    return static_cast<int32_t>(embd->second.shape[0]);
  return data_loss(g.path, ": no vocabulary size: neither tokenizer.ggml.tokens, ", a,
                   ".vocab_size nor token_embd.weight is present");
}

}  // namespace

StatusOr<ModelConfig> gguf_model_config(const GgufFile& g) {
  GgufFields r(g);
  ZL_ASSIGN_OR_RETURN(std::string arch, r.get_string("general.architecture"));
  if (arch.empty()) return data_loss(g.path, ": required key general.architecture is missing");
  const ArchDef* def = find_arch_by_gguf_name(arch);
  if (def == nullptr)
    return unimplemented(g.path, ": architecture \"", arch, "\" is not supported (", supported_gguf_names(), " are)");
  ModelConfig c;
  c.arch = def->name;
  c.source_arch = arch;
  ZL_RETURN_IF_ERROR(read_llm_shape(r, g, arch, &c));
  ZL_RETURN_IF_ERROR(read_rope(r, g, arch, &c));
  ZL_ASSIGN_OR_RETURN(c.vocab_size, read_vocab_size(r, g, arch));
  c.tie_word_embeddings = g.tensors.count("output.weight") == 0;
  ZL_RETURN_IF_ERROR(read_special_ids(r, &c));
  ZL_RETURN_IF_ERROR(def->read_gguf(r, c));
  ZL_RETURN_IF_ERROR(refuse_unread_compute_keys(r, arch));
  ZL_RETURN_IF_ERROR(validate_config(c, g.path));
  return c;
}

}  // namespace zl
