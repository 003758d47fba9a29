// Reading GGUF's k-quant formats (Q2_K .. Q6_K) and the IQ4 formats (IQ4_NL,
// IQ4_XS) against gguf-py's dequantizer: tests/golden/kquant/<type>.blocks
// are random blocks, <type>.f32 the
// values gguf.quants.dequantize gives for them
// (scripts/golden/make_kquant_goldens.py). Each value is a product of an f16
// scale, a small integer scale and a code (IQ4: a grid value), minus an exact min: both sides
// compute it in f32, so they agree to the last bit but for rounding order
// (allowed: 1 ulp of the largest value).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "test_util.h"

namespace zl {
namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class KquantDtypeTest : public ::testing::TestWithParam<DType> {};

TEST_P(KquantDtypeTest, DequantizesAsGgufPy) {
  const DType dtype = GetParam();
  std::string name = dtype_name(dtype);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::vector<uint8_t> blocks = read_bytes(test::golden_path("kquant/" + name + ".blocks"));
  const std::vector<uint8_t> golden_bytes = read_bytes(test::golden_path("kquant/" + name + ".f32"));
  const int64_t block = dtype_block_elems(dtype);
  ASSERT_EQ(block, dtype == DType::kIQ4_NL ? 32 : 256);
  ASSERT_EQ(blocks.size() % static_cast<size_t>(dtype_block_bytes(dtype)), 0u);
  const int64_t n = static_cast<int64_t>(blocks.size()) / dtype_block_bytes(dtype) * block;
  ASSERT_EQ(golden_bytes.size(), static_cast<size_t>(n) * 4);
  std::vector<float> golden(static_cast<size_t>(n)), ours(static_cast<size_t>(n), NAN);
  std::memcpy(golden.data(), golden_bytes.data(), golden_bytes.size());
  ASSERT_EQ(dtype_bytes(dtype, static_cast<uint64_t>(n)), blocks.size());
  dtype_to_f32(dtype, blocks.data(), ours.data(), n);
  float max_abs = 0.0f;
  for (float v : golden) max_abs = std::max(max_abs, std::fabs(v));
  const float tolerance = max_abs * 0x1p-23f;
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(ours[static_cast<size_t>(i)], golden[static_cast<size_t>(i)], tolerance) << name << " value " << i;
    nonzero += golden[static_cast<size_t>(i)] != 0.0f;
  }
  EXPECT_GT(nonzero, n / 2);  // the golden is not trivially zero
}

TEST_P(KquantDtypeTest, RowLengthMustBeWholeBlocks) {
  const uint64_t block = static_cast<uint64_t>(dtype_block_elems(GetParam()));
  if (block == 256) {
    EXPECT_FALSE(dtype_bytes(GetParam(), 32).has_value());
  }
  EXPECT_FALSE(dtype_bytes(GetParam(), 257).has_value());
  EXPECT_EQ(dtype_bytes(GetParam(), 512), 512 / block * static_cast<uint64_t>(dtype_block_bytes(GetParam())));
}

INSTANTIATE_TEST_SUITE_P(Types, KquantDtypeTest,
                         ::testing::Values(DType::kQ4_K, DType::kQ6_K, DType::kQ5_K, DType::kQ3_K, DType::kQ2_K,
                                           DType::kIQ4_NL, DType::kIQ4_XS),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace zl
