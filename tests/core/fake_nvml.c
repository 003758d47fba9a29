/* A stand-in for libnvidia-ml.so.1 with known values, so that the NVML
 * reader (src/core/gpu_counters.h) and what shows its counters can be tested
 * on machines without a GPU. It exports the real NVML names with NVML's
 * calling conventions (return 0 on success) and has two devices:
 *   index 0 "Fake H200": utilisation 37% (kernels) and 21% (memory),
 *           12 GiB used of 141 GiB;
 *   index 1 "Fake H200 MIG" (uuid GPU-fake-1): utilisation not supported
 *           (as on a GPU in MIG mode), 1 GiB used of 141 GiB.
 * fake_nvml_num_initialised() tells a test whether init and shutdown paired. */
#include <string.h>

enum { kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3 };

typedef struct FakeDevice {
  const char* name;
  const char* uuid;
  int utilization_supported;
  unsigned long long used;
} FakeDevice;

static const FakeDevice kDevices[2] = {
    {"Fake H200", "GPU-fake-0", 1, 12ull << 30},
    {"Fake H200 MIG", "GPU-fake-1", 0, 1ull << 30},
};
static int g_num_initialised = 0;

int fake_nvml_num_initialised(void) { return g_num_initialised; }

int nvmlInit_v2(void) {
  ++g_num_initialised;
  return kSuccess;
}

int nvmlShutdown(void) {
  if (g_num_initialised == 0) return kUninitialized;
  --g_num_initialised;
  return kSuccess;
}

const char* nvmlErrorString(int code) {
  switch (code) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    default: return "Unknown Error";
  }
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (g_num_initialised == 0) return kUninitialized;
  if (index >= 2 || !device) return kInvalidArgument;
  *device = (void*)&kDevices[index];
  return kSuccess;
}

int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (g_num_initialised == 0) return kUninitialized;
  for (int i = 0; i < 2; ++i)
    if (uuid && strcmp(uuid, kDevices[i].uuid) == 0) {
      *device = (void*)&kDevices[i];
      return kSuccess;
    }
  return kInvalidArgument;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  const FakeDevice* d = (const FakeDevice*)device;
  if (!d || !name || length <= strlen(d->name)) return kInvalidArgument;
  strcpy(name, d->name);
  return kSuccess;
}

typedef struct {
  unsigned int gpu, memory;
} FakeUtilization;

int nvmlDeviceGetUtilizationRates(void* device, FakeUtilization* utilization) {
  const FakeDevice* d = (const FakeDevice*)device;
  if (!d || !utilization) return kInvalidArgument;
  if (!d->utilization_supported) return kNotSupported;
  utilization->gpu = 37;
  utilization->memory = 21;
  return kSuccess;
}

typedef struct {
  unsigned long long total, free, used;
} FakeMemory;

int nvmlDeviceGetMemoryInfo(void* device, FakeMemory* memory) {
  const FakeDevice* d = (const FakeDevice*)device;
  if (!d || !memory) return kInvalidArgument;
  memory->total = 141ull << 30;
  memory->used = d->used;
  memory->free = memory->total - d->used;
  return kSuccess;
}
