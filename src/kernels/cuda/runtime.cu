#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "kernels/cuda/common.cuh"

namespace zl::cuda {

Status cuda_status(cudaError_t error, const char* what) {
  return Status(error == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kInternal,
                str_cat(what, ": ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")"));
}

bool built_with_cuda() { return true; }

int32_t device_count(std::string* reason) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    // Without a driver the runtime answers "insufficient driver" too.
    if (reason)
      *reason = error == cudaErrorInsufficientDriver
                    ? "no CUDA device (no NVIDIA driver, or one older than the CUDA 13 runtime)"
                    : str_cat("no CUDA device: ", cudaGetErrorString(error));
    return 0;
  }
  if (count == 0 && reason) *reason = "no CUDA device: the driver reports none";
  return count;
}

StatusOr<DeviceProps> open_device(int32_t index) {
  std::string reason;
  int32_t count = device_count(&reason);
  if (count == 0) return unimplemented(reason);
  if (index < 0 || index >= count)
    return invalid_argument("no CUDA device cuda:", index, " (", count, " device", count == 1 ? "" : "s", " visible)");
  ZL_CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
  cudaDeviceProp prop;
  ZL_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, index));
  DeviceProps props;
  props.name = prop.name;
  props.sm_count = prop.multiProcessorCount;
  props.cc_major = prop.major;
  props.cc_minor = prop.minor;
  props.l2_bytes = prop.l2CacheSize;
  size_t free_bytes = 0, total_bytes = 0;
  ZL_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  props.free_bytes = static_cast<int64_t>(free_bytes);
  props.total_bytes = static_cast<int64_t>(total_bytes);
  return props;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), num_bytes_(std::exchange(other.num_bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(num_bytes_, other.num_bytes_);
  return *this;
}
StatusOr<DeviceBuffer> DeviceBuffer::allocate(size_t num_bytes) {
  if (num_bytes == 0) return DeviceBuffer();
  void* data = nullptr;
  cudaError_t error = cudaMalloc(&data, num_bytes);
  if (error != cudaSuccess)
    return resource_exhausted("cannot allocate ", num_bytes, " bytes of device memory: ", cudaGetErrorString(error));
  return DeviceBuffer(data, num_bytes);
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}
PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), num_bytes_(std::exchange(other.num_bytes_, 0)) {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(num_bytes_, other.num_bytes_);
  return *this;
}
StatusOr<PinnedBuffer> PinnedBuffer::allocate(size_t num_bytes) {
  if (num_bytes == 0) return PinnedBuffer();
  void* data = nullptr;
  cudaError_t error = cudaMallocHost(&data, num_bytes);
  if (error != cudaSuccess)
    return resource_exhausted("cannot allocate ", num_bytes, " bytes of pinned memory: ", cudaGetErrorString(error));
  return PinnedBuffer(data, num_bytes);
}

Status copy_to_device(void* dst, const void* src, size_t num_bytes, Stream stream) {
  ZL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, num_bytes, cudaMemcpyHostToDevice, stream));
  return ok_status();
}
Status copy_to_host(void* dst, const void* src, size_t num_bytes, Stream stream) {
  ZL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, num_bytes, cudaMemcpyDeviceToHost, stream));
  return ok_status();
}
Status copy_on_device(void* dst, const void* src, size_t num_bytes, Stream stream) {
  ZL_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, num_bytes, cudaMemcpyDeviceToDevice, stream));
  return ok_status();
}
Status fill_zero(void* dst, size_t num_bytes, Stream stream) {
  ZL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, num_bytes, stream));
  return ok_status();
}
Status synchronize(Stream stream) {
  ZL_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return ok_status();
}

StatusOr<Stream> create_stream() {
  cudaStream_t stream = nullptr;
  ZL_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}
void destroy_stream(Stream stream) {
  if (stream) cudaStreamDestroy(stream);
}

Status check_launch(const char* what) {
  cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? ok_status() : cuda_status(error, what);
}

StatusOr<double> median_device_ms(const std::function<Status()>& work, int32_t reps) {
  cudaEvent_t start, stop;
  ZL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  ZL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  std::vector<float> ms(static_cast<size_t>(reps) + 1);  // ms[0] is the warm-up
  // In a lambda so that the events are destroyed on every path below.
  auto time_all = [&]() -> Status {
    for (float& one : ms) {
      ZL_CUDA_RETURN_IF_ERROR(cudaEventRecord(start));
      ZL_RETURN_IF_ERROR(work());
      ZL_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop));
      ZL_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
      ZL_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&one, start, stop));
    }
    return ok_status();
  };
  const Status status = time_all();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  ZL_RETURN_IF_ERROR(status);
  std::sort(ms.begin() + 1, ms.end());
  return static_cast<double>(ms[1 + static_cast<size_t>(reps) / 2]);
}

StatusOr<double> copy_bandwidth_gbps(size_t num_bytes, int32_t reps) {
  ZL_ASSIGN_OR_RETURN(DeviceBuffer src, DeviceBuffer::allocate(num_bytes));
  ZL_ASSIGN_OR_RETURN(DeviceBuffer dst, DeviceBuffer::allocate(num_bytes));
  ZL_CUDA_RETURN_IF_ERROR(cudaMemset(src.data(), 0x5a, num_bytes));  // not zeros
  ZL_ASSIGN_OR_RETURN(double ms, median_device_ms([&] { return copy_on_device(dst.data(), src.data(), num_bytes); }, reps));
  return 2.0 * static_cast<double>(num_bytes) / (ms * 1e-3) / 1e9;
}

}  // namespace zl::cuda
