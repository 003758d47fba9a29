// Linear layers on the device through cuBLASLt: y = x · Wᵀ with x and W in
// bf16 and f32 accumulation and output (CUBLAS_COMPUTE_32F); calls of up to
// kGemvMaxTokens tokens go to kernels/cuda/gemv.h instead. W is stored as
// PyTorch stores a Linear weight, [out_features, in_features], row-major.
//
// One Gemm per stream: it owns the cuBLASLt handle, a fixed workspace (so
// calls can be captured into CUDA graphs, which forbid allocation) and a plan
// (descriptors + heuristic algorithm) per shape, made on first use. Capture a
// shape only after it has run once outside capture.
//
// Batch-invariant mode (invariant_max_tokens > 0): cuBLASLt's heuristic picks
// a different kernel (tile, split-k) for each token count, so a row's result
// changes in its last bits with the batch around it. In this mode one
// algorithm without split-k serves every token count of an (n, k) shape, so
// row t of y is the same whatever else is in the call (vLLM's and SGLang's
// batch-invariant / deterministic modes do the same); it may be slower.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/cuda/runtime.h"
#include "zerolayer/status.h"

namespace zl::cuda {

class Gemm {
 public:
  static StatusOr<std::unique_ptr<Gemm>> create(size_t workspace_bytes = size_t{32} << 20,
                                                int64_t invariant_max_tokens = 0);
  ~Gemm();

  // x: [num_tokens, k] bf16; w: [n, k] bf16; y: [num_tokens, n] f32.
  Status run(const Bf16* x, const Bf16* w, float* y, int64_t num_tokens, int64_t n, int64_t k, Stream stream);

 private:
  struct Impl;
  explicit Gemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl::cuda
