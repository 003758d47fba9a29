// A build without nvcc: the device queries of runtime.h answer "built
// without CUDA", so --device cuda:N and the gpu tests fail or skip cleanly.
#ifndef ZL_HAVE_CUDA
#include "kernels/cuda/runtime.h"

namespace zl::cuda {

bool built_with_cuda() { return false; }

int32_t device_count(std::string* reason) {
  if (reason) *reason = "built without CUDA (nvcc was not found, or ZL_ENABLE_CUDA=OFF, when zerolayer was configured)";
  return 0;
}

StatusOr<DeviceProps> open_device(int32_t index) {
  return unimplemented("cannot use cuda:", index, ": zerolayer was built without CUDA (nvcc was not found, "
                       "or ZL_ENABLE_CUDA=OFF, when it was configured)");
}

StatusOr<double> median_device_ms(const std::function<Status()>&, int32_t) { return open_device(0).status(); }
StatusOr<double> copy_bandwidth_gbps(size_t, int32_t) { return open_device(0).status(); }

}  // namespace zl::cuda
#endif
