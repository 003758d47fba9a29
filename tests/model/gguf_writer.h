// Test-only builder of GGUF bytes: metadata of any type, tensors with data,
// and knobs to corrupt the result (counts, version, offsets, raw entries).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace zl::test {

class GgufWriter {
 public:
  // GGUF value type ids (match zl::GgufType).
  enum : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

  template <typename T>
  static std::string le(T v) {
    std::string s(sizeof(T), '\0');
    std::memcpy(s.data(), &v, sizeof(T));
    return s;
  }
  static std::string str(const std::string& s) { return le<uint64_t>(s.size()) + s; }

  // A key with an already-encoded type id and value (for corrupt values).
  void add_raw(const std::string& key, uint32_t type, const std::string& value_bytes) {
    kv_.push_back(str(key) + le(type) + value_bytes);
    ++num_kv_;
  }
  void add_u32(const std::string& key, uint32_t v) { add_raw(key, kU32, le(v)); }
  void add_i32(const std::string& key, int32_t v) { add_raw(key, kI32, le(v)); }
  void add_u64(const std::string& key, uint64_t v) { add_raw(key, kU64, le(v)); }
  void add_f32(const std::string& key, float v) { add_raw(key, kF32, le(v)); }
  void add_bool(const std::string& key, bool v) { add_raw(key, kBool, std::string(1, v ? 1 : 0)); }
  void add_string(const std::string& key, const std::string& v) { add_raw(key, kString, str(v)); }
  void add_string_array(const std::string& key, const std::vector<std::string>& v) {
    std::string b = le<uint32_t>(kString) + le<uint64_t>(v.size());
    for (const std::string& s : v) b += str(s);
    add_raw(key, kArray, b);
  }
  void add_f32_array(const std::string& key, const std::vector<float>& v) {
    std::string b = le<uint32_t>(kF32) + le<uint64_t>(v.size());
    for (float x : v) b += le(x);
    add_raw(key, kArray, b);
  }
  void add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    std::string b = le<uint32_t>(kI32) + le<uint64_t>(v.size());
    for (int32_t x : v) b += le(x);
    add_raw(key, kArray, b);
  }

  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;  // ggml order, innermost first
    uint32_t ggml_type = 0;
    std::string data;
    std::optional<uint64_t> offset;  // overrides the computed offset
  };
  Tensor& add_tensor(std::string name, std::vector<uint64_t> ne, uint32_t ggml_type, std::string data) {
    tensors_.push_back({std::move(name), std::move(ne), ggml_type, std::move(data), {}});
    return tensors_.back();
  }
  Tensor& add_f32_tensor(std::string name, std::vector<uint64_t> ne, const std::vector<float>& values) {
    std::string data(values.size() * 4, '\0');
    std::memcpy(data.data(), values.data(), data.size());
    return add_tensor(std::move(name), std::move(ne), 0, std::move(data));
  }

  // Corruption knobs.
  std::string magic = "GGUF";
  uint32_t version = 3;
  uint64_t alignment = 32;  // used for layout; write general.alignment yourself to change it
  std::optional<uint64_t> num_tensors_override;
  std::optional<uint64_t> num_kv_override;

  std::string build() const {
    std::string out = magic + le(version);
    out += le<uint64_t>(num_tensors_override.value_or(tensors_.size()));
    out += le<uint64_t>(num_kv_override.value_or(num_kv_));
    for (const std::string& kv : kv_) out += kv;
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const Tensor& t : tensors_) {
      offsets.push_back(offset);
      out += str(t.name) + le<uint32_t>(t.ne.size());
      for (uint64_t d : t.ne) out += le(d);
      out += le(t.ggml_type) + le<uint64_t>(t.offset.value_or(offset));
      offset += pad(t.data.size());
    }
    // Pad before each tensor but not after the last, so that cutting any byte
    // off the end truncates a tensor.
    for (const Tensor& t : tensors_) {
      out.resize(pad(out.size()), '\0');
      out += t.data;
    }
    return out;
  }

 private:
  uint64_t pad(uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }

  std::vector<std::string> kv_;
  uint64_t num_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace zl::test
