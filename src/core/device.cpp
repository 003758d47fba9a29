#include "zerolayer/device.h"

namespace zl {

StatusOr<Device> parse_device(std::string_view text) {
  if (text == "cpu") return Device{};
  if (text == "cuda") return Device{Device::Kind::kCuda, 0};
  constexpr std::string_view kPrefix = "cuda:";
  if (text.substr(0, kPrefix.size()) == kPrefix) {
    std::string_view digits = text.substr(kPrefix.size());
    int32_t index = 0;
    bool ok = !digits.empty() && digits.size() <= 4;
    for (char c : digits) {
      ok = ok && c >= '0' && c <= '9';
      index = index * 10 + (c - '0');
    }
    if (ok && index <= 1023) return Device{Device::Kind::kCuda, index};
  }
  return invalid_argument("--device must be cpu, cuda or cuda:N, got '", text, "'");
}

std::string device_name(const Device& device) {
  return device.is_cuda() ? str_cat("cuda:", device.index) : std::string("cpu");
}

}  // namespace zl
