// Reading GGUF's Q5_0 and Q5_1 against gguf-py's dequantizer:
// tests/golden/q5/<type>.blocks are random blocks, <type>.f32 the values
// gguf.quants.dequantize gives for them (scripts/golden/make_q5_goldens.py).
// Both sides compute each value as one exact f32 product (Q5_1: plus one
// rounded f32 sum), so they agree bit for bit.
#include <gtest/gtest.h>

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

std::string golden_name(DType dtype) { return dtype == DType::kQ5_0 ? "q5_0" : "q5_1"; }

class Q5DtypeTest : public ::testing::TestWithParam<DType> {};

TEST_P(Q5DtypeTest, DequantizesAsGgufPy) {
  const DType dtype = GetParam();
  const std::string name = golden_name(dtype);
  const std::vector<uint8_t> blocks = read_bytes(test::golden_path("q5/" + name + ".blocks"));
  const std::vector<uint8_t> golden_bytes = read_bytes(test::golden_path("q5/" + name + ".f32"));
  ASSERT_FALSE(blocks.empty());
  ASSERT_EQ(blocks.size() % static_cast<size_t>(dtype_block_bytes(dtype)), 0u);
  const int64_t n = static_cast<int64_t>(blocks.size()) / dtype_block_bytes(dtype) * 32;
  ASSERT_EQ(golden_bytes.size(), static_cast<size_t>(n) * 4);
  std::vector<float> golden(static_cast<size_t>(n)), ours(static_cast<size_t>(n), NAN);
  std::memcpy(golden.data(), golden_bytes.data(), golden_bytes.size());
  ASSERT_EQ(dtype_bytes(dtype, static_cast<uint64_t>(n)), blocks.size());
  dtype_to_f32(dtype, blocks.data(), ours.data(), n);
  int64_t nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i);
    ASSERT_EQ(std::memcmp(&ours[k], &golden[k], 4), 0) << name << " value " << i << ": " << ours[k] << " vs "
                                                       << golden[k];
    nonzero += golden[k] != 0.0f;
  }
  EXPECT_GT(nonzero, n / 2);  // the golden is not trivially zero
}

// The codes as the kernels read them give the golden values too (the
// scale and min are the block's f16s): the code layout is checked apart
// from the arithmetic.
TEST_P(Q5DtypeTest, CodesTimesScalePlusMinAreTheGolden) {
  const DType dtype = GetParam();
  const std::string name = golden_name(dtype);
  const std::vector<uint8_t> blocks = read_bytes(test::golden_path("q5/" + name + ".blocks"));
  const std::vector<uint8_t> golden_bytes = read_bytes(test::golden_path("q5/" + name + ".f32"));
  const int64_t block_bytes = dtype_block_bytes(dtype), num_blocks = static_cast<int64_t>(blocks.size()) / block_bytes;
  ASSERT_GT(num_blocks, 0);
  ASSERT_EQ(golden_bytes.size(), static_cast<size_t>(num_blocks) * 32 * 4);
  int code_seen[32] = {};
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* p = blocks.data() + b * block_bytes;
    uint8_t codes[32];
    q5_codes(dtype, p, codes);
    uint16_t h[2] = {0, 0};
    std::memcpy(h, p, dtype == DType::kQ5_0 ? 2 : 4);
    const float d = f16_to_f32(h[0]), m = f16_to_f32(h[1]);
    for (int j = 0; j < 32; ++j) {
      ASSERT_LT(codes[j], 32) << name << " block " << b << " element " << j;
      ++code_seen[codes[j]];
      float golden;
      std::memcpy(&golden, golden_bytes.data() + 4 * (32 * b + j), 4);
      const float value = dtype == DType::kQ5_0 ? d * static_cast<float>(codes[j] - 16) : d * codes[j] + m;
      EXPECT_EQ(value, golden) << name << " block " << b << " element " << j;
    }
  }
  for (int c = 0; c < 32; ++c) EXPECT_GT(code_seen[c], 0) << name << " code " << c << " never occurs";
}

TEST_P(Q5DtypeTest, BlocksOf32) {
  const DType dtype = GetParam();
  EXPECT_EQ(dtype_block_elems(dtype), 32);
  EXPECT_EQ(dtype_block_bytes(dtype), dtype == DType::kQ5_0 ? 22 : 24);
  EXPECT_FALSE(dtype_bytes(dtype, 16).has_value());
  EXPECT_FALSE(dtype_bytes(dtype, 33).has_value());
  EXPECT_EQ(dtype_bytes(dtype, 64), 2 * static_cast<uint64_t>(dtype_block_bytes(dtype)));
  EXPECT_EQ(std::string(dtype_name(dtype)), dtype == DType::kQ5_0 ? "Q5_0" : "Q5_1");
}

INSTANTIATE_TEST_SUITE_P(Types, Q5DtypeTest, ::testing::Values(DType::kQ5_0, DType::kQ5_1),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace zl
