// KV-cache block formats (kernels/cpu/kv_format.h): sizes and offsets, e4m3 against
// its definition (every code, and nearest-even rounding checked by brute
// force over all codes), and stored rows read back within each format's
// rounding bound.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/kv_format.h"

namespace zl::cpu {
namespace {

TEST(KvFormatTest, SizesAndOffsetsPerFormat) {
  // 2 KV heads of 128, 16 positions a block: llama.cpp's f16 and q8_0 sizes
  // (q8_0: 34 bytes per 32 values).
  EXPECT_EQ(kv_layout(KvCacheDtype::kF32, 2, 128, 16, 1).block_bytes(), 16 * 1024);
  EXPECT_EQ(kv_layout(KvCacheDtype::kF16, 2, 128, 16, 1).block_bytes(), 16 * 512);
  EXPECT_EQ(kv_layout(KvCacheDtype::kBF16, 2, 128, 16, 1).block_bytes(), 16 * 512);
  EXPECT_EQ(kv_layout(KvCacheDtype::kQ8_0, 2, 128, 16, 1).block_bytes(), 16 * 272);
  EXPECT_EQ(kv_layout(KvCacheDtype::kFp8, 2, 128, 16, 10).arena_bytes(), 10 * 16 * 272);
  // A head of 80 has blocks of 32, 32 and 16: 3 scales. Head-major tiles of
  // 8 positions: codes, then their scales.
  const KvLayout l = kv_layout(KvCacheDtype::kQ8_0, 3, 80, 8, 5);
  EXPECT_EQ(l.scales_per_head, 3);
  EXPECT_EQ(l.tile_bytes, 8 * (80 + 6));
  EXPECT_EQ(l.head_stride, 5 * 688);
  EXPECT_EQ(l.value_offset(4, 2, 5), 2 * 5 * 688 + 4 * 688 + 5 * 80);
  EXPECT_EQ(l.scale_offset(4, 2, 5), 2 * 5 * 688 + 4 * 688 + 8 * 80 + 5 * 6);
}

TEST(KvFormatTest, E4m3DecodesByDefinition) {
  EXPECT_EQ(e4m3_to_f32(0x00), 0.0f);
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(e4m3_to_f32(0x08), std::ldexp(1.0f, -6));   // smallest normal
  EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);                 // largest finite
  EXPECT_EQ(e4m3_to_f32(0xb8), -1.0f);
  // Every finite code encodes back to itself (0x80, -0, included).
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;  // NaN
    EXPECT_EQ(f32_to_e4m3(e4m3_to_f32(static_cast<uint8_t>(c))), c) << "code " << c;
  }
}

TEST(KvFormatTest, E4m3RoundsToNearestEvenAndSaturates) {
  std::mt19937 rng(3);
  std::vector<float> xs;
  std::uniform_real_distribution<float> exponent(-12.0f, 9.5f);
  for (int i = 0; i < 20000; ++i) xs.push_back((i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng)));
  for (int c = 0; c < 0x7e; ++c)  // the midpoints between neighbours: ties
    xs.push_back(0.5f * (e4m3_to_f32(static_cast<uint8_t>(c)) + e4m3_to_f32(static_cast<uint8_t>(c + 1))));
  for (float x : xs) {
    const float a = std::fabs(x);
    if (a >= 448.0f) {
      EXPECT_EQ(f32_to_e4m3(x), x < 0 ? 0xfe : 0x7e) << x;
      continue;
    }
    // The nearest codes by brute force; on a tie, the even one.
    int best = 0;
    for (int c = 1; c <= 0x7e; ++c) {
      const float d = std::fabs(e4m3_to_f32(static_cast<uint8_t>(c)) - a);
      const float b = std::fabs(e4m3_to_f32(static_cast<uint8_t>(best)) - a);
      if (d < b || (d == b && c % 2 == 0)) best = c;
    }
    EXPECT_EQ(f32_to_e4m3(x) & 0x7f, best) << x;
    EXPECT_EQ(f32_to_e4m3(x) & 0x80, x < 0 ? 0x80 : 0) << x;
  }
  EXPECT_EQ(f32_to_e4m3(NAN), 0);
}

// A position of 2 heads of 80 (a short last block of 32) with values over
// several magnitudes, stored in slot 3 of block 1 and read back.
TEST(KvFormatTest, StoredRowsReadBackWithinTheFormatsRounding) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(160);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (i % 32 == 5 ? 40.0f : 1.0f);  // an outlier per block
  x[7] = 0.0f;
  for (KvCacheDtype dtype : {KvCacheDtype::kF32, KvCacheDtype::kF16, KvCacheDtype::kBF16, KvCacheDtype::kQ8_0,
                             KvCacheDtype::kFp8}) {
    const KvLayout l = kv_layout(dtype, 2, 80, 4, 2);
    std::vector<uint8_t> arena(static_cast<size_t>(l.arena_bytes()));
    store_kv(l, x.data(), arena.data(), 1, 3);
    for (int32_t h = 0; h < 2; ++h) {
      std::vector<float> y(80);
      load_kv_head(l, arena.data(), 1, 3, h, y.data());
      for (int32_t d = 0; d < 80; ++d) {
        const float want = x[static_cast<size_t>(h * 80 + d)], got = y[static_cast<size_t>(d)];
        float amax = 0.0f;  // of the value's block of 32
        for (int32_t e = d / 32 * 32; e < std::min(80, d / 32 * 32 + 32); ++e)
          amax = std::max(amax, std::fabs(x[static_cast<size_t>(h * 80 + e)]));
        switch (dtype) {
          case KvCacheDtype::kF32: EXPECT_EQ(got, want); break;
          case KvCacheDtype::kF16: EXPECT_EQ(got, f16_to_f32(f32_to_f16(want))); break;
          case KvCacheDtype::kBF16: EXPECT_EQ(got, bf16_to_f32(f32_to_bf16(want))); break;
          // Half a step of the block's scale (amax / 127, f16-rounded: up to 2^-11 larger).
          case KvCacheDtype::kQ8_0: EXPECT_LE(std::fabs(got - want), amax / 254.0f * 1.001f) << d; break;
          // Half an e4m3 step at the scaled value (2^-4 relative), or half the
          // subnormal step (2^-10 x amax / 448).
          case KvCacheDtype::kFp8:
            EXPECT_LE(std::fabs(got - want), std::fabs(want) / 16.0f * 1.001f + amax / 448.0f / 1024.0f) << d;
            break;
          case KvCacheDtype::kAuto: break;
        }
        if (want == 0.0f) {
          EXPECT_EQ(got, 0.0f);
        }
      }
    }
  }
}

}  // namespace
}  // namespace zl::cpu
