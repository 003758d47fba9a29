#include "model/hf_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/mapped_file.h"
#include "model/json_util.h"

namespace zl {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxConfigBytes = 16ull << 20;

// Typed, optional access to the fields of one JSON object. A field that is
// absent or null counts as missing; a present field of the wrong type is an
// error naming `source` and the field (with `prefix`, e.g. "rope_scaling.").
class FieldReader {
 public:
  FieldReader(const json& object, const std::string& source, std::string prefix = "")
      : object_(object), source_(source), prefix_(std::move(prefix)) {}

  const std::string& source() const { return source_; }

  // nullptr when absent or null.
  const json* find(const char* key) const {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  Status type_error(const char* key, const char* expected, const json& got) const {
    return data_loss(source_, ": field \"", prefix_, key, "\": expected ", expected, ", got ",
                     json_type_name(got), " ", got.dump());
  }
  Status missing(const char* key) const {
    return data_loss(source_, ": required field \"", prefix_, key, "\" is missing");
  }

  // An integer in int32 range (an integral float like 4096.0 is accepted).
  StatusOr<int32_t> get_i32(const char* key, std::optional<int32_t> fallback = std::nullopt) const {
    const json* v = find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      return missing(key);
    }
    std::optional<int32_t> out = to_i32(*v);
    if (!out) return type_error(key, "a 32-bit integer", *v);
    return *out;
  }

  StatusOr<float> get_float(const char* key, std::optional<float> fallback = std::nullopt) const {
    const json* v = find(key);
    if (v == nullptr) {
      if (fallback) return *fallback;
      return missing(key);
    }
    if (!v->is_number()) return type_error(key, "a number", *v);
    return static_cast<float>(v->get<double>());
  }

  StatusOr<bool> get_bool(const char* key, bool fallback) const {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) return type_error(key, "a boolean", *v);
    return v->get<bool>();
  }

  // "" when missing.
  StatusOr<std::string> get_string(const char* key) const {
    const json* v = find(key);
    if (v == nullptr) return std::string();
    if (!v->is_string()) return type_error(key, "a string", *v);
    return v->get<std::string>();
  }

  // Token ids: an int or a list of ints; empty when missing.
  StatusOr<std::vector<int32_t>> get_id_list(const char* key) const {
    std::vector<int32_t> ids;
    const json* v = find(key);
    if (v == nullptr) return ids;
    if (!v->is_array()) {
      std::optional<int32_t> id = to_i32(*v);
      if (!id) return type_error(key, "an integer or a list of integers", *v);
      ids.push_back(*id);
      return ids;
    }
    for (const json& item : *v) {
      std::optional<int32_t> id = to_i32(item);
      if (!id) return type_error(key, "a list of integers", *v);
      ids.push_back(*id);
    }
    return ids;
  }

 private:
  static std::optional<int32_t> to_i32(const json& v) {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned()) {
        uint64_t u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) return std::nullopt;
        return static_cast<int32_t>(u);
      }
      int64_t i = v.get<int64_t>();
      if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max())
        return std::nullopt;
      return static_cast<int32_t>(i);
    }
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (d != std::floor(d) || d < std::numeric_limits<int32_t>::min() ||
          d > std::numeric_limits<int32_t>::max())
        return std::nullopt;
      return static_cast<int32_t>(d);
    }
    return std::nullopt;
  }

  const json& object_;
  std::string source_;
  std::string prefix_;
};

StatusOr<Arch> read_arch(const FieldReader& r, std::string* source_arch) {
  const json* archs = r.find("architectures");
  if (archs == nullptr) return r.missing("architectures");
  if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    return r.type_error("architectures", "a non-empty list of strings", *archs);
  *source_arch = (*archs)[0].get<std::string>();
  if (*source_arch == "LlamaForCausalLM") return Arch::kLlama;
  if (*source_arch == "MistralForCausalLM") return Arch::kMistral;
  if (*source_arch == "Qwen2ForCausalLM") return Arch::kQwen2;
  return unimplemented(r.source(), ": architecture \"", *source_arch,
                       "\" is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM are)");
}

Status read_shape(const FieldReader& r, ModelConfig* c) {
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

  ZL_ASSIGN_OR_RETURN(std::string act, r.get_string("hidden_act"));
  if (!act.empty() && act != "silu")
    return unimplemented(r.source(), ": field \"hidden_act\" = \"", act, "\": only silu is supported");
  // Mistral's sliding_window (and Qwen2's use_sliding_window/max_window_layers)
  // are accepted and ignored: our contexts are shorter than any window those
  // models ship with. They are still type-checked.
  if (const json* w = r.find("sliding_window"); w != nullptr && !w->is_number_integer())
    return r.type_error("sliding_window", "an integer or null", *w);
  ZL_ASSIGN_OR_RETURN(bool unused_swa, r.get_bool("use_sliding_window", false));
  (void)unused_swa;
  return ok_status();
}

Status read_rope_scaling(const FieldReader& r, const char* key, ModelConfig* c) {
  const json* rs = r.find(key);
  if (rs == nullptr) return ok_status();
  if (!rs->is_object()) return r.type_error(key, "an object or null", *rs);
  FieldReader s(*rs, r.source(), std::string(key) + ".");
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
    ZL_ASSIGN_OR_RETURN(out.original_max_position_embeddings,
                        s.get_i32("original_max_position_embeddings"));
  } else if (type.empty()) {
    return data_loss(r.source(), ": field \"", key, "\" has neither \"rope_type\" nor \"type\"");
  } else {
    return unimplemented(r.source(), ": field \"", key, ".rope_type\" = \"", type,
                         "\" is not supported (default, linear, llama3 are)");
  }
  return ok_status();
}

Status read_rope(const FieldReader& r, ModelConfig* c) {
  ZL_ASSIGN_OR_RETURN(c->rope_theta, r.get_float("rope_theta", 10000.0f));
  ZL_RETURN_IF_ERROR(read_rope_scaling(r, "rope_scaling", c));
  // transformers >= 5 folds rope_theta and the scaling into rope_parameters.
  const json* params = r.find("rope_parameters");
  if (params == nullptr || r.find("rope_scaling") != nullptr) return ok_status();
  ZL_RETURN_IF_ERROR(read_rope_scaling(r, "rope_parameters", c));
  FieldReader p(*params, r.source(), "rope_parameters.");
  if (r.find("rope_theta") == nullptr) {
    ZL_ASSIGN_OR_RETURN(c->rope_theta, p.get_float("rope_theta", 10000.0f));
  }
  return ok_status();
}

Status read_special_ids(const FieldReader& r, ModelConfig* c) {
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
  return read_special_ids(FieldReader(gen, path), c);
}

}  // namespace

StatusOr<ModelConfig> read_hf_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  ZL_ASSIGN_OR_RETURN(json root, read_json_file(path, kMaxConfigBytes));
  if (!root.is_object()) return data_loss(path, ": top level is ", json_type_name(root), ", not an object");
  FieldReader r(root, path);

  ModelConfig c;
  ZL_ASSIGN_OR_RETURN(c.arch, read_arch(r, &c.source_arch));
  ZL_RETURN_IF_ERROR(read_shape(r, &c));
  ZL_RETURN_IF_ERROR(read_rope(r, &c));
  c.rope_interleaved = false;  // transformers' rotate_half
  ZL_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.get_bool("tie_word_embeddings", false));
  ZL_ASSIGN_OR_RETURN(bool attention_bias, r.get_bool("attention_bias", false));
  ZL_ASSIGN_OR_RETURN(bool mlp_bias, r.get_bool("mlp_bias", false));
  if (mlp_bias) return unimplemented(path, ": field \"mlp_bias\" = true is not supported");
  switch (c.arch) {
    case Arch::kLlama: c.attention_bias = attention_bias; break;
    case Arch::kMistral: c.attention_bias = false; break;  // MistralAttention has no bias
    case Arch::kQwen2: c.attention_bias = true; break;     // q/k/v always biased
  }
  ZL_RETURN_IF_ERROR(read_special_ids(r, &c));
  ZL_RETURN_IF_ERROR(read_generation_config(dir, &c));
  ZL_RETURN_IF_ERROR(validate_config(c, path));
  return c;
}

}  // namespace zl
