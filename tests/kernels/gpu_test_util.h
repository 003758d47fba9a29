// Helpers for the *_gpu_test.cpp files: skip without a device, move vectors
// to and from it, and compare with the CPU op by relative L2 error
// ||out - ref|| / ||ref|| (NaN never passes).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/dtype.h"
#include "kernels/cuda/runtime.h"

namespace zl::test {

// GTEST_SKIPs the calling test (with the driver's reason) when no device is usable.
#define ZL_REQUIRE_CUDA_DEVICE()                                               \
  do {                                                                         \
    std::string zl_reason_;                                                    \
    if (::zl::cuda::device_count(&zl_reason_) == 0) GTEST_SKIP() << zl_reason_; \
    ASSERT_TRUE(::zl::cuda::open_device(0).ok());                              \
  } while (0)

template <typename T>
cuda::DeviceBuffer to_device(const std::vector<T>& host) {
  auto buffer = cuda::DeviceBuffer::allocate(host.size() * sizeof(T));
  CHECK(buffer.ok()) << buffer.status().to_string();
  CHECK(cuda::copy_to_device(buffer->data(), host.data(), host.size() * sizeof(T)).ok());
  return std::move(*buffer);
}

// A device buffer of n elements filled with 0xff bytes (NaN as f32 and bf16),
// so an element a kernel fails to write shows up.
template <typename T>
cuda::DeviceBuffer poisoned(size_t n) {
  return to_device(std::vector<uint8_t>(n * sizeof(T), 0xff));
}

template <typename T>
std::vector<T> to_host(const cuda::DeviceBuffer& buffer, size_t n) {
  std::vector<T> host(n);
  CHECK(cuda::synchronize().ok());
  CHECK(cuda::copy_to_host(host.data(), buffer.data(), n * sizeof(T)).ok());
  CHECK(cuda::synchronize().ok());
  return host;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

inline std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
  return out;
}

// ||out - ref|| / ||ref||, in double; +inf when out holds a NaN.
inline double relative_error(const std::vector<float>& out, const std::vector<float>& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(out[i])) return INFINITY;
    num += (double{out[i]} - ref[i]) * (double{out[i]} - ref[i]);
    den += double{ref[i]} * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace zl::test
