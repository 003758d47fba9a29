// Where the forward pass runs: the CPU, or one CUDA device. Parsed from the
// --device flag ("cpu", "cuda", "cuda:N"); whether that device exists is
// checked later, by whoever opens it (kernels/cuda/runtime.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zerolayer/status.h"

namespace zl {

struct Device {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int32_t index = 0;  // the CUDA ordinal; 0 for the CPU

  bool is_cuda() const { return kind == Kind::kCuda; }
  bool operator==(const Device&) const = default;
};

// "cpu", "cuda" (= cuda:0) or "cuda:N" with N a decimal ordinal in [0, 1023].
// The message names the flag and quotes the text.
StatusOr<Device> parse_device(std::string_view text);
std::string device_name(const Device& device);

}  // namespace zl
