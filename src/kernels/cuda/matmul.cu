#include <cublasLt.h>

#include <map>
#include <tuple>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/gemv.h"
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
  int64_t invariant_max_tokens = 0;  // > 0: one algorithm per (n, k) for every token count up to this
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::unique_ptr<Plan>> plans;  // (T, n, k)
  struct InvariantAlgo {
    int64_t n, k;
    cublasLtMatmulAlgo_t algo;
  };
  std::vector<InvariantAlgo> invariant_algos;  // one per (n, k): a model has a handful of shapes

  ~Impl() {
    plans.clear();
    if (handle) cublasLtDestroy(handle);
  }

  Status describe(Plan& p, int64_t num_tokens, int64_t n, int64_t k) {
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    ZL_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
    ZL_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, k, n, k));
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, k, num_tokens, k));
    ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, n, num_tokens, n));
    return ok_status();
  }

  // cuBLASLt's best algorithms for the plan's shape, best first, into
  // results[0, max_results); returns how many. With `no_split_k`, only those
  // that reduce over k inside one kernel.
  int heuristics(const Plan& p, cublasLtMatmulHeuristicResult_t* results, int max_results, bool no_split_k) {
    cublasLtMatmulPreference_t pref = nullptr;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return 0;
    size_t workspace_bytes = workspace.num_bytes();
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                         sizeof(workspace_bytes));
    if (no_split_k) {
      const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask));
    }
    int num_results = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.c, p.c, pref, max_results,
                                                           results, &num_results);
    cublasLtMatmulPreferenceDestroy(pref);
    return status == CUBLAS_STATUS_SUCCESS ? num_results : 0;
  }

  // Whether cuBLASLt runs `algo` on the plan's shape within the workspace.
  bool fits(const Plan& p, const cublasLtMatmulAlgo_t& algo) {
    cublasLtMatmulHeuristicResult_t checked = {};
    return cublasLtMatmulAlgoCheck(handle, p.desc, p.a, p.b, p.c, p.c, &algo, &checked) == CUBLAS_STATUS_SUCCESS &&
           checked.workspaceSize <= workspace.num_bytes();
  }

  // Batch invariance: row t of y must not depend on how many rows share the
  // call, so every token count uses one algorithm (one kernel, one order of
  // the k reduction, no split-k). Taken from the candidates for 64 tokens,
  // the first that cuBLASLt accepts at 1 token and at the most tokens too.
  // (A Status and an out-parameter: nvcc 13's front end fails on a StatusOr
  // of this C struct.)
  Status invariant_algo(int64_t n, int64_t k, cublasLtMatmulAlgo_t& out) {
    for (const InvariantAlgo& known : invariant_algos)
      if (known.n == n && known.k == k) {
        out = known.algo;
        return ok_status();
      }
    Plan probe, lo, hi;
    ZL_RETURN_IF_ERROR(describe(probe, 64, n, k));
    ZL_RETURN_IF_ERROR(describe(lo, 1, n, k));
    ZL_RETURN_IF_ERROR(describe(hi, invariant_max_tokens, n, k));
    cublasLtMatmulHeuristicResult_t candidates[16] = {};
    const int num_candidates = heuristics(probe, candidates, 16, true);
    for (int i = 0; i < num_candidates; ++i) {
      const cublasLtMatmulAlgo_t& algo = candidates[i].algo;
      if (fits(lo, algo) && fits(hi, algo)) {
        invariant_algos.push_back({n, k, algo});
        out = algo;
        return ok_status();
      }
    }
    return unimplemented("cuBLASLt has no batch-invariant bf16 GEMM algorithm for n=", n, " k=", k, " and 1..",
                         invariant_max_tokens, " tokens");
  }

  // Asking cuBLASLt's heuristic costs about a millisecond, and prefill steps
  // come in every token count, so one answer serves a power-of-two bucket of
  // counts: the heuristic's pick for the bucket's largest count, checked for
  // this count (else this count's own pick).
  Status bucket_algo(Plan& p, int64_t num_tokens, int64_t n, int64_t k) {
    int64_t bucket = 1;
    while (bucket < num_tokens) bucket *= 2;
    Plan* top = &p;
    if (bucket != num_tokens) {
      ZL_ASSIGN_OR_RETURN(top, plan(bucket, n, k));
    }
    if (top != &p && fits(p, top->algo)) {
      p.algo = top->algo;
      return ok_status();
    }
    cublasLtMatmulHeuristicResult_t best = {};
    if (heuristics(p, &best, 1, false) == 0)
      return unimplemented("cuBLASLt has no bf16 GEMM algorithm for T=", num_tokens, " n=", n, " k=", k);
    p.algo = best.algo;
    return ok_status();
  }

  StatusOr<Plan*> plan(int64_t num_tokens, int64_t n, int64_t k) {
    auto key = std::make_tuple(num_tokens, n, k);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second.get();
    auto p = std::make_unique<Plan>();
    ZL_RETURN_IF_ERROR(describe(*p, num_tokens, n, k));
    if (invariant_max_tokens > 0) {
      if (num_tokens > invariant_max_tokens)
        return invalid_argument("GEMM of ", num_tokens, " tokens beyond the batch-invariant maximum ",
                                invariant_max_tokens);
      ZL_RETURN_IF_ERROR(invariant_algo(n, k, p->algo));
    } else {
      ZL_RETURN_IF_ERROR(bucket_algo(*p, num_tokens, n, k));
    }
    Plan* raw = p.get();
    plans.emplace(key, std::move(p));
    return raw;
  }
};

Gemm::Gemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gemm::~Gemm() = default;

StatusOr<std::unique_ptr<Gemm>> Gemm::create(size_t workspace_bytes, int64_t invariant_max_tokens) {
  auto impl = std::make_unique<Impl>();
  impl->invariant_max_tokens = invariant_max_tokens;
  ZL_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&impl->handle));
  ZL_ASSIGN_OR_RETURN(impl->workspace, DeviceBuffer::allocate(workspace_bytes));
  return std::unique_ptr<Gemm>(new Gemm(std::move(impl)));
}

Status Gemm::run(const Bf16* x, const Bf16* w, float* y, int64_t num_tokens, int64_t n, int64_t k, Stream stream) {
  if (num_tokens == 0) return ok_status();
  // Decode's few tokens stream the weights faster through gemv (kernels/cuda/gemv.h);
  // not in batch-invariant mode, where one algorithm serves every token count.
  if (impl_->invariant_max_tokens == 0 && gemv_supports(x, w, num_tokens, k))
    return gemv(x, w, y, num_tokens, n, k, stream);
  ZL_ASSIGN_OR_RETURN(Plan * p, impl_->plan(num_tokens, n, k));
  const float alpha = 1.0f, beta = 0.0f;
  ZL_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(impl_->handle, p->desc, &alpha, w, p->a, x, p->b, &beta, y, p->c, y, p->c,
                                           &p->algo, impl_->workspace.data(), impl_->workspace.num_bytes(), stream));
  return ok_status();
}

}  // namespace zl::cuda
