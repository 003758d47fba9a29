#include "model/config_fields.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "model/gguf.h"
#include "model/json_util.h"

namespace zl {
namespace {

using json = nlohmann::json;

std::optional<int32_t> json_to_i32(const json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) return std::nullopt;
      return static_cast<int32_t>(u);
    }
    int64_t i = v.get<int64_t>();
    if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max()) return std::nullopt;
    return static_cast<int32_t>(i);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d != std::floor(d) || d < std::numeric_limits<int32_t>::min() || d > std::numeric_limits<int32_t>::max())
      return std::nullopt;
    return static_cast<int32_t>(d);
  }
  return std::nullopt;
}

constexpr int64_t kNoToken = 0xffffffffll;  // llama.cpp's LLAMA_TOKEN_NULL as u32

}  // namespace

HfFields::HfFields(const json& object, std::string source, std::string prefix)
    : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {}

const json* HfFields::find(const char* key) const {
  read_keys_.insert(key);
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool HfFields::has_key(const char* key) const { return object_.contains(key); }

Status HfFields::type_error(const char* key, const char* expected, const json& got) const {
  return data_loss(source_, ": field \"", prefix_, key, "\": expected ", expected, ", got ", json_type_name(got), " ",
                   got.dump());
}

Status HfFields::missing(const char* key) const {
  return data_loss(source_, ": required field \"", prefix_, key, "\" is missing");
}

Status HfFields::refuse(const char* key, const std::string& why) const {
  const json* v = find(key);
  return unimplemented(source_, ": field \"", prefix_, key, "\" = ", v ? v->dump() : "null", " is not supported (",
                       why, ")");
}

StatusOr<int32_t> HfFields::get_i32(const char* key, std::optional<int32_t> fallback) const {
  const json* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return missing(key);
  }
  std::optional<int32_t> out = json_to_i32(*v);
  if (!out) return type_error(key, "a 32-bit integer", *v);
  return *out;
}

StatusOr<float> HfFields::get_float(const char* key, std::optional<float> fallback) const {
  const json* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return missing(key);
  }
  if (!v->is_number()) return type_error(key, "a number", *v);
  return static_cast<float>(v->get<double>());
}

StatusOr<bool> HfFields::get_bool(const char* key, bool fallback) const {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return type_error(key, "a boolean", *v);
  return v->get<bool>();
}

StatusOr<std::string> HfFields::get_string(const char* key) const {
  const json* v = find(key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return type_error(key, "a string", *v);
  return v->get<std::string>();
}

StatusOr<std::vector<int32_t>> HfFields::get_id_list(const char* key) const {
  std::vector<int32_t> ids;
  const json* v = find(key);
  if (v == nullptr) return ids;
  if (!v->is_array()) {
    std::optional<int32_t> id = json_to_i32(*v);
    if (!id) return type_error(key, "an integer or a list of integers", *v);
    ids.push_back(*id);
    return ids;
  }
  for (const json& item : *v) {
    std::optional<int32_t> id = json_to_i32(item);
    if (!id) return type_error(key, "a list of integers", *v);
    ids.push_back(*id);
  }
  return ids;
}

StatusOr<std::vector<std::string>> HfFields::get_string_list(const char* key) const {
  std::vector<std::string> out;
  const json* v = find(key);
  if (v == nullptr) return out;
  if (!v->is_array()) return type_error(key, "a list of strings", *v);
  for (const json& item : *v) {
    if (!item.is_string()) return type_error(key, "a list of strings", *v);
    out.push_back(item.get<std::string>());
  }
  return out;
}

const GgufValue* GgufFields::find(const std::string& key) const {
  read_keys_.insert(key);
  return g_.find(key);
}

StatusOr<std::vector<float>> HfFields::get_float_list(const char* key) const {
  std::vector<float> out;
  const json* v = find(key);
  if (v == nullptr) return out;
  if (!v->is_array()) return type_error(key, "a list of numbers", *v);
  for (const json& item : *v) {
    if (!item.is_number()) return type_error(key, "a list of numbers", *v);
    out.push_back(static_cast<float>(item.get<double>()));
  }
  return out;
}

bool GgufFields::has(const std::string& key) const { return find(key) != nullptr; }

bool GgufFields::has_tensor(const std::string& name) const { return g_.tensors.count(name) != 0; }

Status GgufFields::type_error(const std::string& key, const char* expected) const {
  const GgufValue* v = g_.find(key);
  return data_loss(g_.path, ": key ", key, ": expected ", expected, ", got ", v ? gguf_type_name(v->type) : "nothing");
}

StatusOr<int32_t> GgufFields::get_i32(const std::string& key, std::optional<int32_t> fallback) const {
  const GgufValue* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return data_loss(g_.path, ": required key ", key, " is missing");
  }
  std::optional<int64_t> i = v->as_int();
  if (!i || *i < std::numeric_limits<int32_t>::min() || *i > std::numeric_limits<int32_t>::max())
    return type_error(key, "a 32-bit integer");
  return static_cast<int32_t>(*i);
}

StatusOr<float> GgufFields::get_float(const std::string& key, std::optional<float> fallback) const {
  const GgufValue* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return data_loss(g_.path, ": required key ", key, " is missing");
  }
  std::optional<double> d = v->as_float();
  if (!d) return type_error(key, "a number");
  return static_cast<float>(*d);
}

StatusOr<std::string> GgufFields::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::string();
  if (v->as_string() == nullptr) return type_error(key, "a string");
  return *v->as_string();
}

StatusOr<std::optional<bool>> GgufFields::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->as_bool()) return type_error(key, "a bool");
  return v->as_bool();
}

StatusOr<int32_t> GgufFields::get_token_id(const std::string& key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return -1;
  std::optional<int64_t> i = v->as_int();
  if (!i) return type_error(key, "an integer");
  if (*i < 0 || *i == kNoToken) return -1;
  if (*i > std::numeric_limits<int32_t>::max()) return type_error(key, "a token id below 2^31");
  return static_cast<int32_t>(*i);
}

StatusOr<std::vector<float>> GgufFields::get_f32_tensor(const std::string& name, int64_t length) const {
  auto it = g_.tensors.find(name);
  if (it == g_.tensors.end()) return data_loss(g_.path, ": tensor ", name, " is missing");
  const TensorInfo& t = it->second;
  if (t.dtype != DType::kF32 || t.shape != std::vector<int64_t>{length})
    return data_loss(g_.path, ": tensor ", name, " must be F32 of shape [", length, "], got ", dtype_name(t.dtype),
                     " of ", t.shape.size(), " dimensions");
  std::vector<float> values(static_cast<size_t>(length));
  std::memcpy(values.data(), t.data, sizeof(float) * values.size());
  return values;
}

std::optional<std::vector<uint8_t>> GgufFields::get_flags(const std::string& key) const {
  const GgufValue* v = find(key);
  const auto* flags = v == nullptr ? nullptr : std::get_if<std::vector<bool>>(&v->value);
  if (flags == nullptr) return std::nullopt;
  return std::vector<uint8_t>(flags->begin(), flags->end());
}

}  // namespace zl
