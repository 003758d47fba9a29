// Test-only builder of safetensors bytes: tensors with their raw data, plus
// knobs to make the file lie (offsets, header length, raw header text).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace zl::test {

class SafetensorsWriter {
 public:
  struct Tensor {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16", or anything to test rejection
    std::vector<int64_t> shape;
    std::string data;
    // When set, written instead of the computed data_offsets.
    std::optional<std::pair<uint64_t, uint64_t>> offsets;
  };

  Tensor& add(std::string name, std::string dtype, std::vector<int64_t> shape, std::string data) {
    tensors_.push_back({std::move(name), std::move(dtype), std::move(shape), std::move(data), {}});
    return tensors_.back();
  }
  // F32 tensor from values.
  Tensor& add_f32(std::string name, std::vector<int64_t> shape, const std::vector<float>& values) {
    std::string data(values.size() * 4, '\0');
    std::memcpy(data.data(), values.data(), data.size());
    return add(std::move(name), "F32", std::move(shape), std::move(data));
  }

  // Extra text appended inside the top-level object, e.g. "\"__metadata__\":{...}".
  std::string extra_entries;
  // When set, the header JSON is exactly this.
  std::optional<std::string> header_override;
  // When set, the 8-byte length field says this.
  std::optional<uint64_t> header_len_override;

  std::string header() const {
    if (header_override) return *header_override;
    std::string h = "{";
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
      if (h.size() > 1) h += ",";
      uint64_t begin = offset, end = offset + t.data.size();
      if (t.offsets) std::tie(begin, end) = *t.offsets;
      h += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
      for (size_t i = 0; i < t.shape.size(); ++i) {
        if (i) h += ",";
        h += std::to_string(t.shape[i]);
      }
      h += "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
      offset += t.data.size();
    }
    if (!extra_entries.empty()) h += (h.size() > 1 ? "," : "") + extra_entries;
    return h + "}";
  }

  std::string build() const {
    std::string h = header();
    uint64_t len = header_len_override.value_or(h.size());
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
    out += h;
    for (const Tensor& t : tensors_) out += t.data;
    return out;
  }

 private:
  std::vector<Tensor> tensors_;
};

}  // namespace zl::test
