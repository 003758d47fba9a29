// argmax_f32 (run-time dispatched) against a plain loop: lengths around the
// vector width, ties (the lowest index wins, as torch.argmax), -inf, and the
// row-parallel version on the thread pool.
#include "kernels/cpu/argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace zl::cpu {
namespace {

int32_t reference(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return static_cast<int32_t>(best);
}

TEST(ArgmaxTest, MatchesAPlainLoopOnRandomLengths) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 100, 512, 1000, 32000}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int trial = 0; trial < 20; ++trial) {
      for (float& v : x) v = normal(rng);
      ASSERT_EQ(argmax_f32(x.data(), n), reference(x.data(), n)) << "n=" << n;
    }
  }
}

TEST(ArgmaxTest, TiesGoToTheLowestIndex) {
  std::vector<float> x(100, -1.0f);
  x[97] = 3.0f;
  x[40] = 3.0f;
  x[70] = 3.0f;
  EXPECT_EQ(argmax_f32(x.data(), 100), 40);
  std::vector<float> flat(37, 0.5f);
  EXPECT_EQ(argmax_f32(flat.data(), 37), 0);
  std::vector<float> tail(33, -INFINITY);
  tail[32] = -1e30f;  // the maximum in the scalar tail
  EXPECT_EQ(argmax_f32(tail.data(), 33), 32);
}

TEST(ArgmaxTest, RowsOnThePoolMatchOneByOne) {
  ThreadPool pool(2);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  const int64_t rows = 37, n = 515;
  std::vector<float> x(static_cast<size_t>(rows * n));
  for (float& v : x) v = normal(rng);
  std::vector<int32_t> out(static_cast<size_t>(rows), -1);
  argmax_rows_f32(pool, x.data(), rows, n, out.data());
  for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(out[static_cast<size_t>(r)], reference(&x[static_cast<size_t>(r * n)], n));
  argmax_rows_f32(pool, x.data(), 1, n, out.data());
  EXPECT_EQ(out[0], reference(x.data(), n));
}

}  // namespace
}  // namespace zl::cpu
