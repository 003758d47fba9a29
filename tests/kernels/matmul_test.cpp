// Every matmul kernel (each ISA the CPU has, each weight format) against the
// scalar reference on random shapes, including widths that are not multiples
// of the vector width and token counts that leave partial register tiles.
//
// Tolerances, as max |y - y_ref| / max |y_ref| per product:
//   * vector ISA vs scalar reference, same format: 1e-5 (the same exact
//     products or integer dots; only the f32 summation order differs);
//   * quantized formats vs f32 on the dequantized weights: 2e-2 (the int8
//     rounding of the activations, ~1/254 of each block's max, accumulated
//     over a few hundred blocks in random sign; llama.cpp computes the same way).
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <random>
#include <tuple>
#include <vector>

#include "core/aligned_vector.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"

namespace zl::cpu {
namespace {

struct Quantized {
  std::vector<uint8_t> data;
  std::vector<float> scales;
  std::vector<uint8_t> packed;  // 64 bytes of slack for alignment
  WeightMatrix w;

  // The same matrix with its packed copy (matmul.h) for the AVX-512 kernels.
  WeightMatrix with_packed() {
    packed.assign(static_cast<size_t>(packed_bytes(w)) + 64, 0);
    uint8_t* p = packed.data() + (-reinterpret_cast<uintptr_t>(packed.data()) & 63);
    pack_matrix(w, p);
    WeightMatrix pw = w;
    pw.packed = p;
    return pw;
  }
};

Quantized make_matrix(DType dtype, const std::vector<float>& f, int64_t rows, int64_t cols) {
  Quantized q;
  q.w.dtype = dtype;
  q.w.rows = rows;
  q.w.cols = cols;
  q.data.resize(static_cast<size_t>(rows * q.w.row_bytes()) + 64);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = &f[static_cast<size_t>(r * cols)];
    uint8_t* dst = q.data.data() + r * q.w.row_bytes();
    switch (dtype) {
      case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(cols) * 4); break;
      case DType::kF16:
      case DType::kBF16:
        for (int64_t i = 0; i < cols; ++i) {
          uint16_t h = dtype == DType::kF16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
          std::memcpy(dst + 2 * i, &h, 2);
        }
        break;
      case DType::kQ8_0: quantize_row_q8_0(src, dst, cols); break;
      case DType::kQ4_0: quantize_row_q4_0(src, dst, cols); break;
      case DType::kQ5_0: quantize_row_q5_0(src, dst, cols); break;
      case DType::kQ5_1: quantize_row_q5_1(src, dst, cols); break;
      case DType::kQ4_K: quantize_row_q4_k(src, dst, cols); break;
      case DType::kQ6_K: quantize_row_q6_k(src, dst, cols); break;
      case DType::kI8:
        q.scales.push_back(quantize_row_i8(src, reinterpret_cast<int8_t*>(dst), cols));
        break;
      case DType::kQ5_K:
      case DType::kQ3_K:
      case DType::kQ2_K:
      case DType::kIQ4_NL:
      case DType::kIQ4_XS: random_gguf_blocks(dtype, static_cast<uint32_t>(r * 7919 + rows), dst, cols); break;
    }
  }
  q.w.data = q.data.data();
  q.w.scales = q.scales.empty() ? nullptr : q.scales.data();
  return q;
}

// ref: f32 outputs, or f64 ones (exact products).
template <class Ref>
double rel_error(const std::vector<float>& y, const std::vector<Ref>& ref) {
  double worst = 0.0, max_ref = 1e-30;
  for (size_t i = 0; i < y.size(); ++i) {
    worst = std::max(worst, std::fabs(double{y[i]} - ref[i]));
    max_ref = std::max(max_ref, std::fabs(double{ref[i]}));
  }
  return worst / max_ref;
}

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, VectorKernelsMatchScalarReference) {
  const DType dtype = GetParam();
  const bool quantized = dtype_is_quantized(dtype);
  std::mt19937 rng(42);
  ThreadPool pool(2);
  struct Shape {
    int64_t tokens, rows, cols;
  };
  // Float widths include non-multiples of 8 and 16; quantized widths are
  // multiples of 32, odd block counts included.
  std::vector<Shape> shapes = {{1, 1, 32}, {1, 7, 96}, {3, 13, 160}, {5, 33, 64}, {8, 64, 256},
                               {17, 21, 352}, {64, 40, 128}, {2, 300, 512}};
  // k-quants: whole super-blocks of 256 (a single 256-wide output is too few
  // for the 2e-2 bound against the exact product below, a ratio of random values).
  if (dtype_has_super_blocks(dtype))
    shapes = {{1, 4, 256}, {1, 7, 512}, {3, 13, 768}, {5, 33, 256}, {8, 64, 512}, {17, 21, 1280}, {64, 40, 256},
              {2, 300, 512}};
  // Float formats also: odd widths, rows that end in partial 16-row groups
  // and in packed f16 panels of 1 or 2 groups (70 rows: 3 + 2, 120: 3 + 3 + 2,
  // 50: 3 + 1; the thread split cuts panels of 300 rows), and token
  // counts past its 8-token tiles (with a remainder) up to prefill-like 200.
  if (!quantized)
    shapes.insert(shapes.end(), {{1, 5, 1}, {2, 9, 23}, {6, 17, 100}, {9, 3, 257}, {1, 70, 33}, {1, 120, 64},
                                 {12, 50, 77}, {31, 35, 31}, {200, 19, 40}});
  for (const Shape& s : shapes) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> wf(static_cast<size_t>(s.rows * s.cols)), x(static_cast<size_t>(s.tokens * s.cols));
    for (float& v : wf) v = u(rng);
    for (float& v : x) v = u(rng);
    Quantized m = make_matrix(dtype, wf, s.rows, s.cols);
    std::vector<float> bias(static_cast<size_t>(s.rows));
    for (float& v : bias) v = u(rng);
    std::vector<float> ref(static_cast<size_t>(s.tokens * s.rows));
    matmul(pool, x.data(), m.w, bias.data(), ref.data(), s.tokens, Isa::kScalar);
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      if (!isa_supported(isa)) continue;
      std::vector<float> y(ref.size(), NAN);
      matmul(pool, x.data(), m.w, bias.data(), y.data(), s.tokens, isa);
      EXPECT_LE(rel_error(y, ref), 1e-5f) << dtype_name(dtype) << " " << isa_name(isa) << " tokens " << s.tokens
                                          << " rows " << s.rows << " cols " << s.cols;
      if (isa != Isa::kAvx512 || packed_bytes(m.w) == 0) continue;
      const WeightMatrix packed = m.with_packed();
      std::vector<float> yp(ref.size(), NAN);
      matmul(pool, x.data(), packed, bias.data(), yp.data(), s.tokens, isa);
      // Packed Q8_0 / Q4_0 / I8 weights: the same instructions on the same
      // values, so the same bits (the formats read packed only go, unpacked,
      // to other kernels that sum in another order); packed bf16 sums in another order, and with AVX512-BF16
      // multiplies activations rounded to bf16: exact to f32 sums against the
      // scalar product of the rounded activations, within 2^-9 per element of
      // the unrounded one (~2e-3 of the largest output at these sizes).
      if (dtype == DType::kQ8_0 || dtype == DType::kQ4_0 || dtype == DType::kI8) {
        EXPECT_EQ(yp, y) << dtype_name(dtype) << " packed, tokens " << s.tokens << " rows " << s.rows << " cols "
                         << s.cols;
      } else if (dtype == DType::kBF16 && bf16_dot_supported()) {
        std::vector<float> xr(x.size()), ref_r(ref.size());
        for (size_t i = 0; i < x.size(); ++i) xr[i] = bf16_to_f32(f32_to_bf16(x[i]));
        matmul(pool, xr.data(), m.w, bias.data(), ref_r.data(), s.tokens, Isa::kScalar);
        EXPECT_LE(rel_error(yp, ref_r), 1e-5f) << "bf16 dot, tokens " << s.tokens << " rows " << s.rows << " cols "
                                               << s.cols;
        EXPECT_LE(rel_error(yp, ref), 1e-2f) << "bf16 dot, tokens " << s.tokens << " rows " << s.rows << " cols "
                                             << s.cols;
      } else {
        EXPECT_LE(rel_error(yp, ref), 1e-5f) << dtype_name(dtype) << " packed, tokens " << s.tokens << " rows "
                                             << s.rows << " cols " << s.cols;
      }
    }
    // The exact product with the dequantized weights: what activation
    // quantization costs.
    std::vector<float> deq(wf.size()), exact(ref.size());
    for (int64_t r = 0; r < s.rows; ++r) m.w.row_to_f32(r, &deq[static_cast<size_t>(r * s.cols)]);
    for (int64_t t = 0; t < s.tokens; ++t)
      for (int64_t r = 0; r < s.rows; ++r) {
        double sum = bias[static_cast<size_t>(r)];
        for (int64_t k = 0; k < s.cols; ++k) sum += double{deq[static_cast<size_t>(r * s.cols + k)]} * x[static_cast<size_t>(t * s.cols + k)];
        exact[static_cast<size_t>(t * s.rows + r)] = static_cast<float>(sum);
      }
    EXPECT_LE(rel_error(ref, exact), quantized ? 2e-2f : 1e-5f)
        << dtype_name(dtype) << " tokens " << s.tokens << " rows " << s.rows << " cols " << s.cols;
  }
}

// The exact (f64) product of row r's codes and one token's int8 activations
// (xq: [cols], xd: [cols / 32]): what a quantized kernel computes, with no
// rounding. Block values as the kernels read them: scale * code + min
// (weight_block), or scale[h] * code - offset[h] per half block (kquant_block);
// the f16 scales times small integers are exact in f32.
double exact_code_product(const WeightMatrix& w, int64_t r, const int8_t* xq, const float* xd) {
  int8_t codes[32];
  double sum = 0.0;
  for (int64_t b = 0; b < w.cols / 32; ++b) {
    double scale[2], offset[2];
    if (dtype_has_super_blocks(w.dtype)) {
      float s[2], o[2];
      const uint8_t* super =
          static_cast<const uint8_t*>(w.data) + r * w.row_bytes() + b / 8 * dtype_block_bytes(w.dtype);
      kquant_block(w.dtype, super, static_cast<int>(b % 8), codes, s, o);
      scale[0] = s[0], scale[1] = s[1], offset[0] = o[0], offset[1] = o[1];
    } else {
      float s, min = 0.0f;
      weight_block(w, r, b, codes, &s, &min);
      scale[0] = scale[1] = s;
      offset[0] = offset[1] = -double{min};
    }
    double block = 0.0;
    for (int l = 0; l < 32; ++l) block += (scale[l / 16] * codes[l] - offset[l / 16]) * xq[b * 32 + l];
    sum += block * xd[b];
  }
  return w.dtype == DType::kI8 ? sum * w.scales[r] : sum;
}

// Each quantized kernel against the exact product of the same weight and
// activation codes: only its f32 roundings remain (the block sums'
// conversions, the scale products, the running sum over 128 blocks: ~2^-24
// each in random sign). Measured 1.4e-7 - 8e-7 of the largest output
// (2026-12-07); 2e-6 leaves room for other summation orders, while one block
// read with a wrong scale or code costs ~1e-2.
class QuantizedMatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(QuantizedMatmulTest, KernelsNearTheExactProductOfTheirCodes) {
  const DType dtype = GetParam();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t rows = 48, cols = 4096, max_tokens = 20;
  std::vector<float> wf(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(max_tokens * cols));
  for (float& v : wf) v = u(rng);
  for (float& v : x) v = u(rng);
  Quantized m = make_matrix(dtype, wf, rows, cols);
  std::vector<int8_t> xq(x.size());
  std::vector<float> xd(x.size() / 32), xds(xd.size());
  quantize_activations(x.data(), max_tokens, cols, xq.data(), xd.data(), xds.data());
  std::vector<double> exact(static_cast<size_t>(max_tokens * rows));
  for (int64_t t = 0; t < max_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r)
      exact[static_cast<size_t>(t * rows + r)] =
          exact_code_product(m.w, r, &xq[static_cast<size_t>(t * cols)], &xd[static_cast<size_t>(t * cols / 32)]);
  const WeightMatrix packed = packed_bytes(m.w) > 0 ? m.with_packed() : m.w;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    for (bool use_packed : {false, true}) {
      if (!isa_supported(isa) || (use_packed && (isa != Isa::kAvx512 || packed.packed == nullptr))) continue;
      for (int64_t tokens : {1, 5, 16, 20}) {
        std::vector<float> y(static_cast<size_t>(tokens * rows));
        matmul(pool, x.data(), use_packed ? packed : m.w, nullptr, y.data(), tokens, isa);
        const std::vector<double> ref(exact.begin(), exact.begin() + tokens * rows);
        EXPECT_LE(rel_error(y, ref), 2e-6) << dtype_name(dtype) << " " << isa_name(isa) << " packed " << use_packed
                                           << " tokens " << tokens;
      }
    }
}

// Batch invariance at the kernel level: a token's outputs are bit-identical
// whether it is multiplied alone (decode: weights read as stored) or among
// 1-7, 11, 15 others or 19 (register tiles of 4 tokens, and for quantized
// formats the decoded weight panel), and whatever the split over threads;
// with packed weights too on AVX-512 (1-16 tokens in one pass over each
// group of 16 rows, from 10 tokens two groups at a time, 70 rows ending in
// one; 20 in strips of 32 rows, token tile by token tile: whole strips with
// one thread, parts of them with two).
TEST_P(MatmulTest, TokenResultsDoNotDependOnBatch) {
  const DType dtype = GetParam();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t tokens = 20, rows = 70, cols = dtype_has_super_blocks(dtype) ? 512 : 352;
  std::vector<float> wf(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(tokens * cols));
  for (float& v : wf) v = u(rng);
  for (float& v : x) v = u(rng);
  Quantized m = make_matrix(dtype, wf, rows, cols);
  const WeightMatrix packed = packed_bytes(m.w) > 0 ? m.with_packed() : m.w;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    for (int threads : {1, 2})
      for (bool use_packed : {false, true}) {
        if (use_packed && isa != Isa::kAvx512) continue;
        ThreadPool pool(threads);
        const WeightMatrix& w = use_packed ? packed : m.w;
        std::vector<float> alone(static_cast<size_t>(tokens * rows)), all(alone.size());
        for (int64_t t = 0; t < tokens; ++t)
          matmul(pool, &x[static_cast<size_t>(t * cols)], w, nullptr, &alone[static_cast<size_t>(t * rows)], 1, isa);
        for (int64_t batch : std::initializer_list<int64_t>{tokens, 2, 3, 4, 5, 6, 7, 8, 12, 16}) {
          matmul(pool, x.data(), w, nullptr, all.data(), batch, isa);
          for (int64_t i = 0; i < batch * rows; ++i)
            ASSERT_EQ(alone[static_cast<size_t>(i)], all[static_cast<size_t>(i)])
                << isa_name(isa) << " threads " << threads << " packed " << use_packed << " batch " << batch
                << " token " << i / rows << " row " << i % rows;
        }
      }
  }
}

// Every format has its own AVX2 and AVX-512 kernel: one that fell back to the
// scalar reference (or AVX-512 to AVX2) would pass the comparisons above unnoticed.
TEST_P(MatmulTest, EveryIsaHasAKernel) {
  EXPECT_NE(tile_kernel_avx2(GetParam()), nullptr) << dtype_name(GetParam());
  EXPECT_NE(tile_kernel_avx512(GetParam()), nullptr) << dtype_name(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Formats, MatmulTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                                           DType::kI8, DType::kQ4_K, DType::kQ6_K, DType::kQ5_0, DType::kQ5_1,
                                           DType::kQ5_K, DType::kQ3_K, DType::kQ2_K, DType::kIQ4_NL,
                                           DType::kIQ4_XS),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });
INSTANTIATE_TEST_SUITE_P(Formats, QuantizedMatmulTest,
                         ::testing::Values(DType::kQ8_0, DType::kQ4_0, DType::kI8, DType::kQ4_K, DType::kQ6_K,
                                           DType::kQ5_0, DType::kQ5_1, DType::kQ5_K, DType::kQ3_K, DType::kQ2_K,
                                           DType::kIQ4_NL, DType::kIQ4_XS),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MatmulTest, SharedInputTargets) {
  // q/k/v style: three matrices, one input, one call; same as three calls
  // (Q5_1 reads the activations' block sums, Q4_0 too).
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t tokens = 3, cols = 128;
  std::vector<float> x(static_cast<size_t>(tokens * cols));
  for (float& v : x) v = u(rng);
  std::vector<Quantized> ms;
  std::vector<std::vector<float>> ys, refs;
  const int64_t rows[] = {64, 16, 48};
  for (int i = 0; i < 3; ++i) {
    std::vector<float> wf(static_cast<size_t>(rows[i] * cols));
    for (float& v : wf) v = u(rng);
    const DType dtypes[] = {DType::kBF16, DType::kQ4_0, DType::kQ5_1};
    ms.push_back(make_matrix(dtypes[i], wf, rows[i], cols));
    ys.emplace_back(static_cast<size_t>(tokens * rows[i]));
    refs.emplace_back(static_cast<size_t>(tokens * rows[i]));
  }
  std::vector<MatmulTarget> targets;
  for (int i = 0; i < 3; ++i) targets.push_back({&ms[static_cast<size_t>(i)].w, nullptr, ys[static_cast<size_t>(i)].data()});
  matmul(pool, x.data(), tokens, targets);
  for (int i = 0; i < 3; ++i) {
    matmul(pool, x.data(), ms[static_cast<size_t>(i)].w, nullptr, refs[static_cast<size_t>(i)].data(), tokens);
    EXPECT_EQ(ys[static_cast<size_t>(i)], refs[static_cast<size_t>(i)]) << i;
  }
}

// Packed targets whose rows are not multiples of 16: the thread split falls
// inside a packed group of the second target (rows 24.. of 40), so a group is
// computed by both threads and each stores only its rows. The result is the
// unpacked one, bit for bit (bf16, f16: the packed matrix alone, split at a group).
TEST(MatmulTest, PackedTargetsSplitInsideGroups) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "packed weights are read by the AVX-512 kernels only";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t cols = 96, rows[] = {40, 40, 41, 23, 25};
  const DType dtypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kI8, DType::kBF16, DType::kF16};
  constexpr size_t kTargets = std::size(rows);
  for (int64_t tokens : {1, 5, 9, 14}) {
    std::vector<float> x(static_cast<size_t>(tokens * cols));
    for (float& v : x) v = u(rng);
    std::vector<Quantized> ms(kTargets);
    std::vector<WeightMatrix> packed;
    std::vector<std::vector<float>> ys, refs;
    for (size_t i = 0; i < kTargets; ++i) {
      std::vector<float> wf(static_cast<size_t>(rows[i] * cols));
      for (float& v : wf) v = u(rng);
      ms[i] = make_matrix(dtypes[i], wf, rows[i], cols);
      packed.push_back(ms[i].with_packed());
      ys.emplace_back(static_cast<size_t>(tokens * rows[i]), NAN);
      refs.emplace_back(static_cast<size_t>(tokens * rows[i]));
    }
    std::vector<MatmulTarget> targets;
    for (size_t i = 0; i < kTargets; ++i) targets.push_back({&packed[i], nullptr, ys[i].data()});
    matmul(pool, x.data(), tokens, targets, Isa::kAvx512);
    for (size_t i = 0; i < kTargets; ++i) {
      const WeightMatrix& ref_w = dtype_is_quantized(dtypes[i]) ? ms[i].w : packed[i];
      matmul(pool, x.data(), ref_w, nullptr, refs[i].data(), tokens, Isa::kAvx512);
      EXPECT_EQ(ys[i], refs[i]) << dtype_name(dtypes[i]) << " tokens " << tokens;
    }
  }
}

// Targets of the formats read packed only on AVX-512 (all but Q8_0, Q4_0, I8) split
// inside a group: each target gives the bits it gives alone.
TEST(MatmulTest, PackedOnlyTargetsSplitInsideGroups) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "packed weights are read by the AVX-512 kernels only";
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t cols = 512, rows[] = {40, 25, 23, 41, 19, 33, 17, 30, 21};
  const DType dtypes[] = {DType::kQ4_K,  DType::kQ6_K, DType::kQ5_K, DType::kIQ4_XS, DType::kIQ4_NL,
                          DType::kQ5_0,  DType::kQ5_1, DType::kQ3_K, DType::kQ2_K};
  for (int64_t tokens : {1, 5, 9}) {
    std::vector<float> x(static_cast<size_t>(tokens * cols));
    for (float& v : x) v = u(rng);
    std::vector<Quantized> ms(std::size(rows));
    std::vector<WeightMatrix> packed;
    std::vector<std::vector<float>> ys;
    std::vector<MatmulTarget> targets;
    for (size_t i = 0; i < std::size(rows); ++i) {
      std::vector<float> wf(static_cast<size_t>(rows[i] * cols));
      for (float& v : wf) v = u(rng);
      ms[i] = make_matrix(dtypes[i], wf, rows[i], cols);
      packed.push_back(ms[i].with_packed());
      ys.emplace_back(static_cast<size_t>(tokens * rows[i]), NAN);
    }
    for (size_t i = 0; i < std::size(rows); ++i) targets.push_back({&packed[i], nullptr, ys[i].data()});
    matmul(pool, x.data(), tokens, targets, Isa::kAvx512);
    for (size_t i = 0; i < std::size(rows); ++i) {
      std::vector<float> alone(ys[i].size());
      matmul(pool, x.data(), packed[i], nullptr, alone.data(), tokens, Isa::kAvx512);
      EXPECT_EQ(ys[i], alone) << dtype_name(dtypes[i]) << " tokens " << tokens;
    }
  }
}

// Decode batches of 17-64 tokens write their outputs past the caches where
// y's token rows start on cache lines (streams_outputs): the same bits as
// through the caches, on two threads (the second's rows are streamed too),
// and a matrix whose rows are not a multiple of 16 is not streamed.
TEST(MatmulTest, StreamedOutputsEqualCachedOnes) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "outputs are streamed by the AVX-512 kernels only";
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t cols = 512, max_tokens = 64;
  std::vector<float> x(static_cast<size_t>(max_tokens * cols));
  for (float& v : x) v = u(rng);
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kI8, DType::kQ4_K, DType::kQ6_K, DType::kQ5_0,
                      DType::kQ5_1, DType::kQ5_K, DType::kQ3_K, DType::kQ2_K, DType::kIQ4_NL, DType::kIQ4_XS})
    for (int64_t rows : {48, 40}) {
      std::vector<float> wf(static_cast<size_t>(rows * cols));
      for (float& v : wf) v = u(rng);
      Quantized m = make_matrix(dtype, wf, rows, cols);
      const WeightMatrix w = m.with_packed();
      AlignedVector<float> lines(static_cast<size_t>(max_tokens * rows + 16), NAN), off(lines.size(), NAN);
      float* shifted = off.data() + 1;  // 4 bytes into a line: never streamed
      ASSERT_EQ(streams_outputs(lines.data(), rows), rows % 16 == 0);
      ASSERT_FALSE(streams_outputs(shifted, rows));
      for (int64_t tokens : {17, 32, 64}) {
        matmul(pool, x.data(), w, nullptr, lines.data(), tokens, Isa::kAvx512);
        matmul(pool, x.data(), w, nullptr, shifted, tokens, Isa::kAvx512);
        for (int64_t i = 0; i < tokens * rows; ++i)
          ASSERT_EQ(lines[static_cast<size_t>(i)], shifted[i])
              << dtype_name(dtype) << " rows " << rows << " tokens " << tokens << " token " << i / rows << " row "
              << i % rows;
      }
    }
  // A stored matrix's strips start at the first row of the call's rows: for
  // the second of two targets, 24 rows into it (its rows 24.. in the part
  // from row 64), inside a group, where a line store would not be aligned.
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kI8}) {
    std::vector<float> wf(static_cast<size_t>(88 * cols));
    for (float& v : wf) v = u(rng);
    Quantized a = make_matrix(dtype, std::vector<float>(wf.begin(), wf.begin() + 40 * cols), 40, cols);
    Quantized b = make_matrix(dtype, std::vector<float>(wf.begin() + 40 * cols, wf.end()), 48, cols);
    AlignedVector<float> ya(static_cast<size_t>(32 * 40)), yb(static_cast<size_t>(32 * 48)), alone(yb.size());
    const MatmulTarget targets[] = {{&a.w, nullptr, ya.data()}, {&b.w, nullptr, yb.data()}};
    matmul(pool, x.data(), 32, targets, Isa::kAvx512);
    matmul(pool, x.data(), b.w, nullptr, alone.data(), 32, Isa::kAvx512);
    EXPECT_EQ(yb, alone) << dtype_name(dtype);
  }
}

// 16-token tiles of the packed formats scaled per block of 32 go to the AMX
// tiles where the CPU has them: every output must be the bits the VNNI
// kernel gives a token alone (8 to 35 tokens: one or two tiles of 16, which
// read ahead differently, and a part tile after them or, for Q8_0, alone;
// rows cut inside groups).
TEST(MatmulTest, AmxTilesGiveTheVnniBits) {
  if (!amx_int8_supported()) GTEST_SKIP() << "no AMX-INT8 here (or ZEROLAYER_AMX=0)";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t rows = 75;
  // Q8_0 and I8 straight from their packed codes, the others through a
  // panel; one token tile and two, with VNNI tokens after them.
  const std::tuple<DType, int64_t, int64_t> cases[] = {
      {DType::kQ8_0, 35, 416},   {DType::kI8, 35, 416},    {DType::kQ8_0, 19, 416},  {DType::kQ8_0, 8, 416},
      {DType::kQ8_0, 29, 416},   {DType::kQ4_0, 35, 416},  {DType::kQ4_0, 27, 416},  {DType::kQ5_0, 32, 416},
      {DType::kQ5_1, 19, 416},   {DType::kIQ4_NL, 27, 416}, {DType::kQ4_K, 35, 512}, {DType::kQ4_K, 16, 512},
      {DType::kQ5_K, 24, 512},   {DType::kIQ4_XS, 35, 512}};
  for (const auto& [dtype, tokens, cols] : cases) {
    std::vector<float> wf(static_cast<size_t>(rows * cols));
    for (float& v : wf) v = u(rng);
    std::vector<float> x(static_cast<size_t>(tokens * cols));
    for (float& v : x) v = u(rng);
    Quantized m = make_matrix(dtype, wf, rows, cols);
    const WeightMatrix packed = m.with_packed();
    std::vector<float> all(static_cast<size_t>(tokens * rows)), one(static_cast<size_t>(rows));
    matmul(pool, x.data(), packed, nullptr, all.data(), tokens, Isa::kAvx512);
    for (int64_t t = 0; t < tokens; ++t) {
      matmul(pool, &x[static_cast<size_t>(t * cols)], packed, nullptr, one.data(), 1, Isa::kAvx512);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(one[static_cast<size_t>(r)], all[static_cast<size_t>(t * rows + r)])
            << dtype_name(dtype) << " token " << t << " row " << r;
    }
  }
}

// Packed bf16 on the AMX-BF16 tiles, one token tile and two, whole and in
// part, 75 rows (a part group): each token's bits alone equal its bits in
// the batch, and the sums are the scalar product of the bf16-rounded
// activations up to f32 rounding.
TEST(MatmulTest, AmxBf16TilesAreBatchInvariant) {
  if (!amx_bf16_supported()) GTEST_SKIP() << "no AMX-BF16 here (or ZEROLAYER_AMX=0)";
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const int64_t rows = 75;
  for (const auto& [tokens, cols] : {std::pair<int64_t, int64_t>{35, 416}, {16, 416}, {19, 64}, {70, 64}, {9, 1024}}) {
    std::vector<float> wf(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(tokens * cols));
    for (float& v : wf) v = u(rng);
    for (float& v : x) v = u(rng);
    Quantized m = make_matrix(DType::kBF16, wf, rows, cols);
    const WeightMatrix packed = m.with_packed();
    std::vector<float> all(static_cast<size_t>(tokens * rows), NAN), one(static_cast<size_t>(rows));
    matmul(pool, x.data(), packed, nullptr, all.data(), tokens, Isa::kAvx512);
    for (int64_t t = 0; t < tokens; ++t) {
      matmul(pool, &x[static_cast<size_t>(t * cols)], packed, nullptr, one.data(), 1, Isa::kAvx512);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(one[static_cast<size_t>(r)], all[static_cast<size_t>(t * rows + r)])
            << "tokens " << tokens << " cols " << cols << " token " << t << " row " << r;
    }
    std::vector<float> xr(x.size()), ref(all.size());
    for (size_t i = 0; i < x.size(); ++i) xr[i] = bf16_to_f32(f32_to_bf16(x[i]));
    matmul(pool, xr.data(), m.w, nullptr, ref.data(), tokens, Isa::kScalar);
    EXPECT_LE(rel_error(all, ref), 1e-5f) << "tokens " << tokens << " cols " << cols;
  }
}

// Groups with their own inputs and widths (the experts of a MoE layer, and
// two input widths) in one call: each group's rows are the bits matmul()
// gives for that group alone, on every ISA, with groups of 0 tokens skipped
// and enough work to run on both threads.
TEST(MatmulTest, GroupsEqualSeparateProducts) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  ThreadPool pool(2);
  const DType dtypes[] = {DType::kQ8_0, DType::kBF16, DType::kQ4_K, DType::kF32, DType::kQ6_K, DType::kI8};
  const int64_t tokens[] = {3, 0, 1, 7, 2, 5}, rows[] = {48, 32, 40, 17, 64, 33};
  constexpr size_t kGroups = std::size(dtypes);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (!isa_supported(isa)) continue;
    std::vector<Quantized> ms(kGroups);
    std::vector<WeightMatrix> ws;
    std::vector<std::vector<float>> xs, ys;
    std::vector<MatmulTarget> targets(kGroups);
    std::vector<MatmulGroup> groups;
    for (size_t g = 0; g < kGroups; ++g) {
      const int64_t cols = g % 2 == 0 ? 512 : 256;
      std::vector<float> wf(static_cast<size_t>(rows[g] * cols));
      for (float& v : wf) v = u(rng);
      ms[g] = make_matrix(dtypes[g], wf, rows[g], cols);
      ws.push_back(isa == Isa::kAvx512 && packed_bytes(ms[g].w) > 0 ? ms[g].with_packed() : ms[g].w);
      xs.emplace_back(static_cast<size_t>(tokens[g] * cols));
      for (float& v : xs[g]) v = u(rng);
      ys.emplace_back(static_cast<size_t>(tokens[g] * rows[g]), NAN);
    }
    for (size_t g = 0; g < kGroups; ++g) {
      targets[g] = {&ws[g], nullptr, ys[g].data()};
      groups.push_back({xs[g].data(), tokens[g], std::span<const MatmulTarget>(&targets[g], 1)});
    }
    matmul_groups(pool, groups, isa);
    for (size_t g = 0; g < kGroups; ++g) {
      std::vector<float> alone(ys[g].size());
      matmul(pool, xs[g].data(), ws[g], nullptr, alone.data(), tokens[g], isa);
      EXPECT_EQ(ys[g], alone) << isa_name(isa) << " group " << g << " " << dtype_name(dtypes[g]);
    }
  }
}

// Q4_K: each value within one step of its block (range / 15) plus the
// 6-bit rounding of the block's scale and min; Q6_K: within one step
// (max |x| of its 16 values / 31, the int8 scale rounded) of the value.
TEST(QuantizeTest, KquantRoundTripWithinOneStep) {
  std::vector<float> x(512);
  for (int i = 0; i < 512; ++i) x[static_cast<size_t>(i)] = std::sin(0.37f * static_cast<float>(i)) * (1 + i % 7);
  for (DType dtype : {DType::kQ4_K, DType::kQ6_K}) {
    std::vector<uint8_t> q(static_cast<size_t>(*dtype_bytes(dtype, 512)));
    if (dtype == DType::kQ4_K) quantize_row_q4_k(x.data(), q.data(), 512);
    else quantize_row_q6_k(x.data(), q.data(), 512);
    std::vector<float> back(512);
    dtype_to_f32(dtype, q.data(), back.data(), 512);
    const int block = dtype == DType::kQ4_K ? 32 : 16;
    for (int b = 0; b < 512 / block; ++b) {
      float lo = 0.0f, hi = 0.0f;
      for (int i = 0; i < block; ++i) {
        lo = std::min(lo, x[static_cast<size_t>(b * block + i)]);
        hi = std::max(hi, x[static_cast<size_t>(b * block + i)]);
      }
      const float step = dtype == DType::kQ4_K ? (hi - lo) / 15 : std::max(hi, -lo) / 31;
      for (int i = 0; i < block; ++i) {
        const size_t k = static_cast<size_t>(b * block + i);
        EXPECT_NEAR(back[k], x[k], step) << dtype_name(dtype) << " value " << k;
      }
    }
  }
}

// Q5_0: the largest magnitude maps to -16 exactly, the other end can clip at
// +15, a whole step (max / 16) away. Q5_1: within half a step (range / 31) of
// each value, plus the f16 rounding of the scale and min.
TEST(QuantizeTest, Q5RoundTripWithinOneStep) {
  std::vector<float> x(96);
  for (int i = 0; i < 96; ++i)  // the third block all positive (Q5_1's min above 0)
    x[static_cast<size_t>(i)] = std::sin(static_cast<float>(i)) * static_cast<float>(1 + i % 5) + (i >= 64 ? 6 : 0);
  for (DType dtype : {DType::kQ5_0, DType::kQ5_1}) {
    std::vector<uint8_t> q(static_cast<size_t>(*dtype_bytes(dtype, 96)));
    if (dtype == DType::kQ5_0) quantize_row_q5_0(x.data(), q.data(), 96);
    else quantize_row_q5_1(x.data(), q.data(), 96);
    std::vector<float> back(96);
    dtype_to_f32(dtype, q.data(), back.data(), 96);
    for (int b = 0; b < 3; ++b) {
      float lo = x[static_cast<size_t>(32 * b)], hi = lo;
      for (int i = 0; i < 32; ++i) {
        lo = std::min(lo, x[static_cast<size_t>(32 * b + i)]);
        hi = std::max(hi, x[static_cast<size_t>(32 * b + i)]);
      }
      const float step = dtype == DType::kQ5_0 ? std::max(hi, -lo) / 16 : (hi - lo) / 31;
      const float bound = dtype == DType::kQ5_0 ? step * 1.01f : step * 0.5f + std::max(hi, -lo) * 2e-3f;
      for (int i = 0; i < 32; ++i) {
        const size_t k = static_cast<size_t>(32 * b + i);
        EXPECT_NEAR(back[k], x[k], bound) << dtype_name(dtype) << " value " << k;
      }
    }
  }
}

// The largest magnitude maps to -8 exactly; the other end can clip at +7, a
// whole step (max / 8) away.
TEST(QuantizeTest, Q4_0RoundTripWithinOneStep) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[static_cast<size_t>(i)] = std::sin(static_cast<float>(i));
  std::vector<uint8_t> q(36);
  quantize_row_q4_0(x.data(), q.data(), 64);
  std::vector<float> back(64);
  dtype_to_f32(DType::kQ4_0, q.data(), back.data(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(back[static_cast<size_t>(i)], x[static_cast<size_t>(i)], 1.0f / 8 + 1e-3f);
}

}  // namespace
}  // namespace zl::cpu
