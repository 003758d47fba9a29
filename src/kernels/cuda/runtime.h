// The CUDA runtime as the rest of zerolayer sees it: finding and opening a
// device, device memory, copies and streams, with errors as Status. No CUDA
// header is included here, so plain C++ (the CLI, the engine, tests) can use
// it; a build without nvcc links runtime_stub.cpp instead, where every device
// query answers "built without CUDA".
//
// Element type on the device: bf16 storage (Bf16 = its 16 raw bits, converted
// on the host by core/dtype.h), f32 arithmetic and accumulation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "zerolayer/status.h"

struct CUstream_st;  // what cudaStream_t points to

namespace zl::cuda {

using Stream = CUstream_st*;  // == cudaStream_t
using Bf16 = uint16_t;

bool built_with_cuda();
// Devices visible to this process; 0 with *reason filled in when there are
// none, the driver is missing, or the build has no CUDA.
int32_t device_count(std::string* reason);

struct DeviceProps {
  std::string name;
  int32_t sm_count = 0;
  int32_t cc_major = 0, cc_minor = 0;
  int64_t l2_bytes = 0;
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;
};
// Makes `index` the calling thread's device. Errors: "built without CUDA",
// "no CUDA device" (with the driver's reason), or an index out of range.
StatusOr<DeviceProps> open_device(int32_t index);

// Owns one cudaMalloc allocation (never managed memory).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  static StatusOr<DeviceBuffer> allocate(size_t num_bytes);
  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t num_bytes() const { return num_bytes_; }

 private:
  DeviceBuffer(void* data, size_t num_bytes) : data_(data), num_bytes_(num_bytes) {}
  void* data_ = nullptr;
  size_t num_bytes_ = 0;
};

// Page-locked host memory, for copies that overlap compute (cudaMallocHost).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  static StatusOr<PinnedBuffer> allocate(size_t num_bytes);
  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t num_bytes() const { return num_bytes_; }

 private:
  PinnedBuffer(void* data, size_t num_bytes) : data_(data), num_bytes_(num_bytes) {}
  void* data_ = nullptr;
  size_t num_bytes_ = 0;
};

// Asynchronous on `stream` (nullptr: the legacy default stream).
Status copy_to_device(void* dst, const void* src, size_t num_bytes, Stream stream = nullptr);
Status copy_to_host(void* dst, const void* src, size_t num_bytes, Stream stream = nullptr);
Status copy_on_device(void* dst, const void* src, size_t num_bytes, Stream stream = nullptr);
Status fill_zero(void* dst, size_t num_bytes, Stream stream = nullptr);
Status synchronize(Stream stream = nullptr);

StatusOr<Stream> create_stream();
void destroy_stream(Stream stream);

// The error a kernel launch left behind, if any, naming `what`.
Status check_launch(const char* what);

// Median device time in ms of the work `work` enqueues on the legacy default
// stream, over `reps` runs after one warm-up, each between two CUDA events.
StatusOr<double> median_device_ms(const std::function<Status()>& work, int32_t reps);

// Device memory bandwidth by a device-to-device copy of num_bytes, counting
// bytes read plus bytes written, in GB/s: the median of `reps` timed copies
// after one warm-up (CUDA events).
StatusOr<double> copy_bandwidth_gbps(size_t num_bytes, int32_t reps);

}  // namespace zl::cuda
