#include <cublasLt.h>

#include <map>
#include <tuple>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/matmul.h"

namespace zl::cuda {
namespace {

Status cublas_status(cublasStatus_t status, const char* what) {
  return Status(StatusCode::kInternal, str_cat(what, ": cuBLASLt status ", static_cast<int>(status)));
}

#define ZL_CUBLAS_RETURN_IF_ERROR(call)                                      \
  do {                                                                       \
    cublasStatus_t zl_cublas_status_ = (call);                               \
    if (zl_cublas_status_ != CUBLAS_STATUS_SUCCESS) return cublas_status(zl_cublas_status_, #call); \
  } while (0)

// cuBLASLt is column-major. Row-major y[T, n] = x[T, k] · w[n, k]ᵀ is, in
// column-major terms, Y (n×T, ld n) = op(A) · B with A = w seen as k×n
// (ld k, transposed) and B = x seen as k×T (ld k).
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

}  // namespace

struct Gemm::Impl {
  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Plan>> plans;  // (T, n, k)

  ~Impl() {
    plans.clear();
    if (handle) cublasLtDestroy(handle);
  }

  StatusOr<Plan*> plan(int64_t num_tokens, int64_t n, int64_t k) {
    auto key = std::make_tuple(num_tokens, n, k);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second.get();
    auto p = std::make_unique<Plan>();
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    ZL_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
    ZL_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_16BF, k, n, k));
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_16BF, k, num_tokens, k));
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p->c, CUDA_R_32F, n, num_tokens, n));

    cublasLtMatmulPreference_t pref = nullptr;
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref));
    size_t workspace_bytes = workspace.num_bytes();
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                         sizeof(workspace_bytes));
    cublasLtMatmulHeuristicResult_t result{};
    int num_results = 0;
    cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->a, p->b, p->c, p->c, pref, 1, &result, &num_results);
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || num_results == 0)
      return unimplemented("cuBLASLt has no bf16 GEMM algorithm for T=", num_tokens, " n=", n, " k=", k);
    p->algo = result.algo;
    Plan* raw = p.get();
    plans.emplace(key, std::move(p));
    return raw;
  }
};

Gemm::Gemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gemm::~Gemm() = default;

StatusOr<std::unique_ptr<Gemm>> Gemm::create(size_t workspace_bytes) {
  auto impl = std::make_unique<Impl>();
  ZL_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&impl->handle));
  ZL_ASSIGN_OR_RETURN(impl->workspace, DeviceBuffer::allocate(workspace_bytes));
  return std::unique_ptr<Gemm>(new Gemm(std::move(impl)));
}

Status Gemm::run(const Bf16* x, const Bf16* w, float* y, int64_t num_tokens, int64_t n, int64_t k, Stream stream) {
  if (num_tokens == 0) return ok_status();
  ZL_ASSIGN_OR_RETURN(Plan * p, impl_->plan(num_tokens, n, k));
  const float alpha = 1.0f, beta = 0.0f;
  ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(impl_->handle, p->desc, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c,
                                           &p->algo, impl_->workspace.data(), impl_->workspace.num_bytes(), stream));
  return ok_status();
}

}  // namespace zl::cuda
