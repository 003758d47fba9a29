// Typed readers over the two places a model's hyper-parameters come from:
// the fields of a Hugging Face config.json (HfFields) and the keys of GGUF
// metadata (GgufFields). Both treat their input as untrusted: a value of the
// wrong type or out of range is an error naming the file and the field.
// The architecture files (model/arch/) read their own fields through them.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "zerolayer/status.h"

namespace zl {

struct GgufFile;
struct GgufValue;

// Typed, optional access to the fields of one JSON object. A field that is
// absent or null counts as missing; a present field of the wrong type is an
// error naming `source` and the field (with `prefix`, e.g. "rope_scaling.").
// Every key looked up is remembered (read_keys), so the caller can tell
// which fields of the file nobody read.
class HfFields {
 public:
  HfFields(const nlohmann::json& object, std::string source, std::string prefix = "");

  const std::string& source() const { return source_; }
  const nlohmann::json& object() const { return object_; }
  const std::set<std::string>& read_keys() const { return read_keys_; }

  // nullptr when absent or null.
  const nlohmann::json* find(const char* key) const;
  // Whether the file has the field at all, null included (not counted as read).
  bool has_key(const char* key) const;
  Status type_error(const char* key, const char* expected, const nlohmann::json& got) const;
  Status missing(const char* key) const;
  // "<source>: field "<key>" = <value> is not supported (<why>)".
  Status refuse(const char* key, const std::string& why) const;

  // An integer in int32 range (an integral float like 4096.0 is accepted).
  StatusOr<int32_t> get_i32(const char* key, std::optional<int32_t> fallback = std::nullopt) const;
  StatusOr<float> get_float(const char* key, std::optional<float> fallback = std::nullopt) const;
  StatusOr<bool> get_bool(const char* key, bool fallback) const;
  // "" when missing.
  StatusOr<std::string> get_string(const char* key) const;
  // Token ids: an int or a list of ints; empty when missing.
  StatusOr<std::vector<int32_t>> get_id_list(const char* key) const;
  // A list of strings; empty when missing.
  StatusOr<std::vector<std::string>> get_string_list(const char* key) const;
  // A list of numbers; empty when missing.
  StatusOr<std::vector<float>> get_float_list(const char* key) const;

 private:
  const nlohmann::json& object_;
  std::string source_;
  std::string prefix_;
  mutable std::set<std::string> read_keys_;
};

// Typed access to GGUF metadata keys; errors name the file and the key.
// Every key looked up is remembered (read_keys), as with HfFields.
class GgufFields {
 public:
  explicit GgufFields(const GgufFile& g) : g_(g) {}

  const GgufFile& file() const { return g_; }
  const std::set<std::string>& read_keys() const { return read_keys_; }
  bool has(const std::string& key) const;
  bool has_tensor(const std::string& name) const;
  Status type_error(const std::string& key, const char* expected) const;

  StatusOr<int32_t> get_i32(const std::string& key, std::optional<int32_t> fallback = std::nullopt) const;
  StatusOr<float> get_float(const std::string& key, std::optional<float> fallback = std::nullopt) const;
  // "" when absent.
  StatusOr<std::string> get_string(const std::string& key) const;
  StatusOr<std::optional<bool>> get_bool(const std::string& key) const;
  // A token id; -1 when absent or stored as 0xFFFFFFFF / a negative value.
  StatusOr<int32_t> get_token_id(const std::string& key) const;
  // An array of bools as 0/1; nullopt when the key is absent or not an array.
  std::optional<std::vector<uint8_t>> get_flags(const std::string& key) const;
  // The values of a one-dimensional F32 tensor of `length` elements that
  // holds hyper-parameters (Phi-3's rope factors); an error naming it when
  // it has another type or shape.
  StatusOr<std::vector<float>> get_f32_tensor(const std::string& name, int64_t length) const;

 private:
  const GgufValue* find(const std::string& key) const;

  const GgufFile& g_;
  mutable std::set<std::string> read_keys_;
};

}  // namespace zl
