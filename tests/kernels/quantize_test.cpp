// The Q5_0 / Q5_1 quantizers against ggml's reference ones, as gguf-py
// writes them: tests/golden/q5/<type>.input.f32 are f32 weights,
// <type>.quantized the blocks gguf.quants.quantize makes of them
// (scripts/golden/make_q5_goldens.py). Round to nearest in f32 on both
// sides, so the bytes agree exactly (a file we write is llama-quantize's).
#include "kernels/cpu/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/matmul.h"
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

// A weight block so small that 1 / its scale overflows (max |x| 2e-38; the
// f16 scale stores 0): every value gets the code of 0 (Q4_0 8, Q5_0 16,
// Q5_1 0 above its min), not an int conversion of inf, which C++ leaves
// undefined (x86 happened to give code 0, that is -8 and -16 times d).
TEST(WeightQuantizeTest, BlockTooSmallForItsInverseGetsTheCodesOfZero) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[static_cast<size_t>(j)] = j % 2 ? 1e-38f : -2e-38f;
  struct Case {
    DType dtype;
    void (*quantize)(const float*, uint8_t*, int64_t);
    int zero_code;
  };
  for (const Case& c : {Case{DType::kQ4_0, quantize_row_q4_0, 8}, Case{DType::kQ5_0, quantize_row_q5_0, 16},
                        Case{DType::kQ5_1, quantize_row_q5_1, 0}}) {
    std::vector<uint8_t> block(static_cast<size_t>(dtype_block_bytes(c.dtype)), 0xa5);
    c.quantize(x.data(), block.data(), 32);
    std::vector<uint8_t> codes(32);
    if (c.dtype == DType::kQ4_0) {
      for (int j = 0; j < 16; ++j) {
        codes[static_cast<size_t>(j)] = block[2 + j] & 0x0f;
        codes[static_cast<size_t>(j + 16)] = block[2 + j] >> 4;
      }
    } else {
      q5_codes(c.dtype, block.data(), codes.data());
    }
    EXPECT_EQ(block[0] | block[1], 0) << dtype_name(c.dtype) << ": the f16 scale of so small a block is 0";
    for (int j = 0; j < 32; ++j)
      EXPECT_EQ(codes[static_cast<size_t>(j)], c.zero_code) << dtype_name(c.dtype) << " value " << j;
  }
}

// The AVX-512 and AVX2 activation quantizers give the scalar one's bytes:
// codes, scales and d * sum(q), over blocks of random values, zeros, exact
// ties of round-to-nearest-even, huge and negative-only values, and values
// so small that 1 / scale overflows (codes 0, not a conversion of inf).
class ActivationQuantizeTest : public ::testing::TestWithParam<Isa> {};

TEST_P(ActivationQuantizeTest, GivesTheScalarBytes) {
  const Isa isa = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "the CPU lacks " << isa_name(isa);
  constexpr int64_t kRows = 3, kCols = 256;
  std::vector<float> x(kRows * kCols);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng) * 3.0f;
  for (int64_t r = 0; r < kRows; ++r) {
    float* row = x.data() + r * kCols;
    std::fill(row + 32, row + 64, 0.0f);                          // block 1: zeros
    for (int j = 0; j < 32; ++j) row[64 + j] = (j - 16) + 0.5f;   // block 2: ties (scale 127 / 127)
    row[64] = 127.0f;
    for (int j = 0; j < 32; ++j) row[96 + j] = normal(rng) * 1e30f;         // block 3: huge
    for (int j = 0; j < 32; ++j) row[128 + j] = -std::fabs(normal(rng));    // block 4: negative
    row[160 + r] = 1e-20f;                                                 // block 5: one tiny among normal
    for (int j = 0; j < 32; ++j) row[192 + j] = j % 2 ? 1e-38f : -2e-38f;  // block 6: 1 / scale overflows
  }
  const int64_t num_blocks = kRows * kCols / 32;
  std::vector<int8_t> q_ref(x.size()), q(x.size(), 99);
  std::vector<float> d_ref(num_blocks), ds_ref(num_blocks), d(num_blocks, -1.0f), ds(num_blocks, -1.0f);
  quantize_activations(x.data(), kRows, kCols, q_ref.data(), d_ref.data(), ds_ref.data());
  (isa == Isa::kAvx512 ? quantize_activations_avx512 : quantize_activations_avx2)(x.data(), kRows, kCols, q.data(),
                                                                                  d.data(), ds.data());
  for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(q[i], q_ref[i]) << "block " << i / 32 << " value " << i % 32;
  for (int64_t b = 0; b < num_blocks; ++b) {
    EXPECT_EQ(std::memcmp(&d[b], &d_ref[b], 4), 0) << "block " << b << ": " << d[b] << " vs " << d_ref[b];
    EXPECT_EQ(std::memcmp(&ds[b], &ds_ref[b], 4), 0) << "block " << b << ": " << ds[b] << " vs " << ds_ref[b];
  }
  EXPECT_EQ(q_ref[64 + 16], 0);  // 0.5 rounds to even
  EXPECT_EQ(q_ref[64 + 17], 2);  // 1.5 too
  for (int j = 0; j < 32; ++j) EXPECT_EQ(q_ref[192 + j], 0) << "value " << j << " of a block of max |x| 2e-38";
  EXPECT_EQ(d_ref[6], 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Isas, ActivationQuantizeTest, ::testing::Values(Isa::kAvx512, Isa::kAvx2),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace zl::cpu
