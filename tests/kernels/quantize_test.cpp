// The Q5_0 / Q5_1 quantizers against ggml's reference ones, as gguf-py
// writes them: tests/golden/q5/<type>.input.f32 are f32 weights,
// <type>.quantized the blocks gguf.quants.quantize makes of them
// (scripts/golden/make_q5_goldens.py). Round to nearest in f32 on both
// sides, so the bytes agree exactly (a file we write is llama-quantize's).
#include "kernels/cpu/quantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "test_util.h"

namespace zl::cpu {
namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Q5QuantizeTest : public ::testing::TestWithParam<DType> {};

TEST_P(Q5QuantizeTest, QuantizesAsGgmlReference) {
  const DType dtype = GetParam();
  const std::string name = dtype == DType::kQ5_0 ? "q5_0" : "q5_1";
  const std::vector<uint8_t> input_bytes = read_bytes(test::golden_path("q5/" + name + ".input.f32"));
  const std::vector<uint8_t> golden = read_bytes(test::golden_path("q5/" + name + ".quantized"));
  ASSERT_FALSE(input_bytes.empty());
  ASSERT_EQ(input_bytes.size() % (32 * 4), 0u);
  const int64_t n = static_cast<int64_t>(input_bytes.size() / 4);
  ASSERT_EQ(dtype_bytes(dtype, static_cast<uint64_t>(n)), golden.size());
  std::vector<float> x(static_cast<size_t>(n));
  std::memcpy(x.data(), input_bytes.data(), input_bytes.size());
  std::vector<uint8_t> ours(golden.size(), 0xa5);
  if (dtype == DType::kQ5_0) quantize_row_q5_0(x.data(), ours.data(), n);
  else quantize_row_q5_1(x.data(), ours.data(), n);
  const int64_t block_bytes = dtype_block_bytes(dtype);
  for (size_t i = 0; i < golden.size(); ++i)
    ASSERT_EQ(ours[i], golden[i]) << name << " block " << i / block_bytes << " byte " << i % block_bytes;
}

INSTANTIATE_TEST_SUITE_P(Types, Q5QuantizeTest, ::testing::Values(DType::kQ5_0, DType::kQ5_1),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace zl::cpu
