#include "core/gpu_counters.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <vector>

namespace zl {
namespace {

// The few NVML types used here, declared from NVML's API reference (no
// nvml.h is needed to build): every call returns nvmlReturn_t, 0 on success.
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlNotSupported = 3;
using NvmlDevice = void*;  // nvmlDevice_t: an opaque handle
struct NvmlUtilization {   // nvmlUtilization_t, percents
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {  // nvmlMemory_t, bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";
constexpr unsigned kNameBytes = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    parts.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

struct GpuCounters::Api {
  void* library = nullptr;
  bool initialised = false;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*handle_by_index)(unsigned int, NvmlDevice*) = nullptr;
  NvmlReturn (*handle_by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;

  ~Api() {
    if (initialised) shutdown();
    if (library) dlclose(library);
  }

  // Finds each function by its exported NVML name.
  Status bind(const std::string& path) {
    library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) return not_found("NVML library ", path, " cannot be loaded: ", dlerror());
    Status status = ok_status();
    auto find = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(library, symbol));
      if (!fn && status.ok()) status = not_found("NVML library ", path, " has no ", symbol);
    };
    find(init, "nvmlInit_v2");
    find(shutdown, "nvmlShutdown");
    find(error_string, "nvmlErrorString");
    find(handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    find(handle_by_uuid, "nvmlDeviceGetHandleByUUID");
    find(name, "nvmlDeviceGetName");
    find(utilization, "nvmlDeviceGetUtilizationRates");
    find(memory, "nvmlDeviceGetMemoryInfo");
    return status;
  }

  std::string error(NvmlReturn code) const {
    const char* text = error_string(code);
    return str_cat(text ? text : "unknown error", " (NVML code ", code, ")");
  }
};

StatusOr<std::unique_ptr<GpuCounters>> GpuCounters::open(int32_t cuda_ordinal, const std::string& library) {
  std::string path = library;
  if (path.empty()) {
    const char* env = std::getenv("ZEROLAYER_NVML_LIBRARY");
    path = env && *env ? env : kDefaultLibrary;
  }
  std::unique_ptr<GpuCounters> counters(new GpuCounters());
  counters->api_ = std::make_unique<Api>();
  Api& api = *counters->api_;
  ZL_RETURN_IF_ERROR(api.bind(path));
  if (NvmlReturn rc = api.init(); rc != kNvmlSuccess) return internal_error("NVML init: ", api.error(rc));
  api.initialised = true;

  // CUDA numbers only the devices CUDA_VISIBLE_DEVICES lists, in its order.
  NvmlReturn rc;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible) {
    std::vector<std::string> entries = split_commas(visible);
    if (cuda_ordinal < 0 || static_cast<size_t>(cuda_ordinal) >= entries.size())
      return invalid_argument("cuda:", cuda_ordinal, " is not among CUDA_VISIBLE_DEVICES=", visible);
    const std::string& entry = entries[cuda_ordinal];
    if (all_digits(entry)) rc = api.handle_by_index(static_cast<unsigned>(std::atoi(entry.c_str())), &counters->device_);
    else if (entry.rfind("GPU-", 0) == 0) rc = api.handle_by_uuid(entry.c_str(), &counters->device_);
    else return unimplemented("CUDA_VISIBLE_DEVICES entry '", entry, "' is neither an index nor a GPU-UUID");
  } else {
    rc = api.handle_by_index(static_cast<unsigned>(cuda_ordinal), &counters->device_);
  }
  if (rc != kNvmlSuccess) return invalid_argument("NVML has no device for cuda:", cuda_ordinal, ": ", api.error(rc));
  char name[kNameBytes] = {};
  if (api.name(counters->device_, name, kNameBytes) == kNvmlSuccess) {
    name[kNameBytes - 1] = '\0';
    counters->name_ = name;
  }
  counters->cuda_ordinal_ = cuda_ordinal;
  return counters;
}

GpuCounters::~GpuCounters() = default;

StatusOr<GpuSample> GpuCounters::read() const {
  GpuSample sample;
  sample.cuda_ordinal = cuda_ordinal_;
  sample.name = name_;
  NvmlUtilization utilization{};
  NvmlReturn rc = api_->utilization(device_, &utilization);
  if (rc == kNvmlSuccess) {
    sample.sm_utilization = utilization.gpu / 100.0;
    sample.memory_utilization = utilization.memory / 100.0;
  } else if (rc != kNvmlNotSupported) {
    return internal_error("NVML utilisation of cuda:", cuda_ordinal_, ": ", api_->error(rc));
  }
  NvmlMemory memory{};
  rc = api_->memory(device_, &memory);
  if (rc != kNvmlSuccess) return internal_error("NVML memory of cuda:", cuda_ordinal_, ": ", api_->error(rc));
  sample.memory_used_bytes = memory.used;
  sample.memory_total_bytes = memory.total;
  return sample;
}

}  // namespace zl
