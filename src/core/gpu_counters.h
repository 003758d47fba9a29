// GPU counters of one CUDA device, read through NVML (the driver's
// management library), for /metrics and `zerolayer monitor`.
//
// libnvidia-ml.so.1 is loaded with dlopen when a reader opens, never linked:
// a build or a machine without the driver still runs, it just has no
// counters (open() fails with kNotFound, which callers treat as "absent").
// ZEROLAYER_NVML_LIBRARY names another library file (tests load a fake one).
// The CUDA ordinal is mapped to NVML's device the way the CUDA runtime counts
// them: through CUDA_VISIBLE_DEVICES (indices or GPU-UUIDs) when it is set,
// else NVML's index is the ordinal (CUDA's order under
// CUDA_DEVICE_ORDER=PCI_BUS_ID, and usually under its default order on nodes
// of one GPU model).
// A reader may be used from any thread (NVML is thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "zerolayer/status.h"

namespace zl {

struct GpuSample {
  int32_t cuda_ordinal = 0;
  std::string name;  // e.g. "NVIDIA H200"
  // Over NVML's last sample period (1/6 s to 1 s, by product); absent where
  // NVML does not support it (a GPU in MIG mode).
  std::optional<double> sm_utilization;      // [0, 1]: share of the period a kernel was running
  std::optional<double> memory_utilization;  // [0, 1]: share of the period device memory was read or written
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
};

class GpuCounters {
 public:
  // Loads NVML (`library`, else $ZEROLAYER_NVML_LIBRARY, else
  // libnvidia-ml.so.1), initialises it and finds CUDA device `cuda_ordinal`.
  // kNotFound when the library or one of its functions is missing; other
  // codes when NVML fails or has no such device (the message says which).
  static StatusOr<std::unique_ptr<GpuCounters>> open(int32_t cuda_ordinal, const std::string& library = "");
  ~GpuCounters();  // shuts NVML down and unloads it
  GpuCounters(const GpuCounters&) = delete;
  GpuCounters& operator=(const GpuCounters&) = delete;

  StatusOr<GpuSample> read() const;

 private:
  struct Api;  // the NVML functions, found with dlsym
  GpuCounters() = default;
  std::unique_ptr<Api> api_;
  void* device_ = nullptr;  // nvmlDevice_t
  int32_t cuda_ordinal_ = 0;
  std::string name_;
};

}  // namespace zl
