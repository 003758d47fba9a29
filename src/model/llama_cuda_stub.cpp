// A build without nvcc: CudaLlamaModel exists so callers link, and creating
// one says why it cannot.
#ifndef ZL_HAVE_CUDA
#include "kernels/cuda/runtime.h"
#include "model/llama_cuda.h"

namespace zl {

struct CudaLlamaModel::Impl {};

StatusOr<std::unique_ptr<CudaLlamaModel>> CudaLlamaModel::create(const ModelConfig& config, const ModelWeights&,
                                                                 const CudaModelOptions& options) {
  ZL_RETURN_IF_ERROR(cuda_supports(config));
  return cuda::open_device(options.device_index).status();  // "built without CUDA"
}
CudaLlamaModel::CudaLlamaModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaLlamaModel::~CudaLlamaModel() = default;
int32_t CudaLlamaModel::num_kv_blocks() const { return 0; }
std::string CudaLlamaModel::description() const { return "built without CUDA"; }
Status CudaLlamaModel::forward(const ForwardBatch&, float*, int32_t*, bool) { return unimplemented("built without CUDA"); }
Status CudaLlamaModel::enqueue(const ForwardBatch&) { return unimplemented("built without CUDA"); }
Status CudaLlamaModel::synchronize() { return unimplemented("built without CUDA"); }
CudaLlamaModel::StepTiming CudaLlamaModel::last_step_timing() const { return {}; }
void CudaLlamaModel::copy_block(int32_t, int32_t) {}

}  // namespace zl
#endif
