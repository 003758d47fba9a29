// The cuBLASLt GEMM against the CPU matmul on the same bf16 values, on shapes
// that are not multiples of any tile (odd n, k, token counts). Tolerance:
// relative L2 error 1e-4 (both sum exact bf16 products in f32; only the
// summation order differs). Also run twice per shape: the cached plan must
// give the same result. And the batch-invariant mode's promise.
#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cuda/matmul.h"

namespace zl {
namespace {

using test::poisoned;
using test::random_floats;
using test::relative_error;
using test::to_bf16;
using test::to_device;
using test::to_host;

TEST(CudaGemm, MatchesCpuMatmulOnBf16Values) {
  ZL_REQUIRE_CUDA_DEVICE();
  auto gemm = cuda::Gemm::create();
  ASSERT_TRUE(gemm.ok()) << gemm.status().to_string();
  ThreadPool pool(2);
  std::mt19937 rng(5);
  // gemv's token counts (1-4; k % 8 == 0; n not a multiple of its 8 rows per
  // block; a k not a multiple of its 8 x 32 pieces per pass) and cuBLASLt's.
  for (auto [tokens, n, k] : {std::tuple{1, 2048, 2048}, {4, 3072, 2048}, {3, 2051, 8192}, {2, 1003, 1000},
                              {7, 3072, 2048}, {33, 129, 72}, {256, 512, 1000}, {3, 17, 8}, {5, 40, 36}}) {
    std::vector<uint16_t> x = to_bf16(random_floats(static_cast<size_t>(tokens * k), rng));
    std::vector<uint16_t> w = to_bf16(random_floats(static_cast<size_t>(n * k), rng, 0.05f));
    auto d_x = to_device(x), d_w = to_device(w);
    auto d_y = poisoned<float>(static_cast<size_t>(tokens * n));
    ASSERT_TRUE((*gemm)->run(d_x.as<uint16_t>(), d_w.as<uint16_t>(), d_y.as<float>(), tokens, n, k, nullptr).ok());
    std::vector<float> y = to_host<float>(d_y, static_cast<size_t>(tokens * n));
    ASSERT_TRUE((*gemm)->run(d_x.as<uint16_t>(), d_w.as<uint16_t>(), d_y.as<float>(), tokens, n, k, nullptr).ok());
    EXPECT_EQ(to_host<float>(d_y, y.size()), y) << "second run with the cached plan differs";

    std::vector<float> xf = test::from_bf16(x);
    WeightMatrix wm;
    wm.dtype = DType::kBF16;
    wm.data = w.data();
    wm.rows = n;
    wm.cols = k;
    std::vector<float> ref(static_cast<size_t>(tokens * n));
    cpu::matmul(pool, xf.data(), wm, nullptr, ref.data(), tokens, cpu::Isa::kScalar);
    EXPECT_LT(relative_error(y, ref), 1e-4) << tokens << "x" << n << "x" << k;
  }
}

// Batch-invariant mode: each row of y is the same, bit for bit, whether it
// is computed alone or among 2, 7, 64 or 300 rows (llama-1b's shapes, and an
// odd one), and still matches the CPU.
TEST(CudaGemm, BatchInvariantRowsDoNotDependOnTheTokenCount) {
  ZL_REQUIRE_CUDA_DEVICE();
  const int64_t max_tokens = 300;
  auto gemm = cuda::Gemm::create(size_t{32} << 20, max_tokens);
  ASSERT_TRUE(gemm.ok()) << gemm.status().to_string();
  std::mt19937 rng(9);
  for (auto [n, k] : {std::pair{3072, 2048}, {2048, 8192}, {16384, 2048}, {129, 72}}) {
    std::vector<uint16_t> x = to_bf16(random_floats(static_cast<size_t>(max_tokens * k), rng));
    std::vector<uint16_t> w = to_bf16(random_floats(static_cast<size_t>(n * k), rng, 0.05f));
    auto d_x = to_device(x), d_w = to_device(w);
    std::vector<float> all;
    for (int64_t tokens : {max_tokens, int64_t{64}, int64_t{7}, int64_t{2}, int64_t{1}}) {
      auto d_y = poisoned<float>(static_cast<size_t>(tokens * n));
      ASSERT_TRUE((*gemm)->run(d_x.as<uint16_t>(), d_w.as<uint16_t>(), d_y.as<float>(), tokens, n, k, nullptr).ok());
      std::vector<float> y = to_host<float>(d_y, static_cast<size_t>(tokens * n));
      if (all.empty()) {
        all = y;
        continue;
      }
      EXPECT_TRUE(std::equal(y.begin(), y.end(), all.begin())) << tokens << " tokens, n=" << n << " k=" << k;
    }
  }
  auto too_many = poisoned<float>(1);
  EXPECT_FALSE((*gemm)->run(nullptr, nullptr, too_many.as<float>(), max_tokens + 1, 8, 8, nullptr).ok());
}

}  // namespace
}  // namespace zl
