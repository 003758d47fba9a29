#include "kernels/cpu/kv_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/immintrin_quiet.h"
#include "kernels/cpu/matmul.h"

namespace zl::cpu {
namespace {

// An f16 scale for a block whose largest magnitude is amax and whose codes
// reach `top`, read back as f32 (what the codes are divided by). 0 for an
// all-zero block; capped at f16's largest finite value.
float block_scale(float amax, float top, uint16_t* stored) {
  *stored = f32_to_f16(std::min(amax / top, 65504.0f));
  return f16_to_f32(*stored);
}

// Quantizes [n] values x with one scale into codes (q8_0: int8, fp8: e4m3).
void quantize_block(KvCacheDtype dtype, const float* x, int32_t n, uint8_t* codes, uint8_t* scale_bytes) {
  float amax = 0.0f;
  for (int32_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));  // NaN never wins
  uint16_t stored;
  const float scale = block_scale(amax, dtype == KvCacheDtype::kQ8_0 ? 127.0f : 448.0f, &stored);
  std::memcpy(scale_bytes, &stored, 2);
  for (int32_t i = 0; i < n; ++i) {
    const float y = scale > 0.0f ? x[i] / scale : 0.0f;
    if (dtype == KvCacheDtype::kFp8) {
      codes[i] = f32_to_e4m3(y);
    } else {
      const float q = y > 127.0f ? 127.0f : y < -127.0f ? -127.0f : y == y ? y : 0.0f;
      codes[i] = static_cast<uint8_t>(static_cast<int8_t>(std::nearbyint(q)));
    }
  }
}

// x [n] to f16 at dst, rounding to nearest even.
void to_f16_scalar(const float* x, int32_t n, uint8_t* dst) {
  for (int32_t d = 0; d < n; ++d) {
    const uint16_t bits = f32_to_f16(x[d]);
    std::memcpy(dst + 2 * d, &bits, 2);
  }
}

// The same with F16C, 8 at a time (where the compiler lacks the instruction,
// f32_to_f16 is a libgcc call per value).
__attribute__((target("avx,f16c"))) void to_f16_f16c(const float* x, int32_t n, uint8_t* dst) {
  int32_t d = 0;
  for (; d + 8 <= n; d += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * d),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + d), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  to_f16_scalar(x + d, n - d, dst + 2 * d);
}

void to_f16(const float* x, int32_t n, uint8_t* dst) {
  if (isa_supported(Isa::kAvx2)) return to_f16_f16c(x, n, dst);  // AVX2 here implies F16C
  to_f16_scalar(x, n, dst);
}

// f16 [n] at src to f32: with F16C 8 at a time (scalar attention reads the
// cache through this; dtype_to_f32 makes a libgcc call per value where the
// compiler lacks the instruction).
__attribute__((target("avx,f16c"))) void from_f16_f16c(const uint8_t* src, int32_t n, float* dst) {
  int32_t d = 0;
  for (; d + 8 <= n; d += 8)
    _mm256_storeu_ps(dst + d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * d))));
  dtype_to_f32(DType::kF16, src + 2 * d, dst + d, n - d);
}

// Every e4m3 code's value, for the scalar reads.
struct E4m3Table {
  E4m3Table() {
    for (int c = 0; c < 256; ++c) value[c] = e4m3_to_f32(static_cast<uint8_t>(c));
  }
  float value[256];
};

}  // namespace

KvLayout kv_layout(KvCacheDtype dtype, int32_t num_kv_heads, int32_t head_dim, int32_t block_size, int64_t num_blocks) {
  KvLayout l;
  l.dtype = dtype;
  l.num_kv_heads = num_kv_heads;
  l.head_dim = head_dim;
  l.block_size = block_size;
  l.num_blocks = num_blocks;
  switch (dtype) {
    case KvCacheDtype::kAuto:
    case KvCacheDtype::kF32: l.value_bytes = 4; break;
    case KvCacheDtype::kF16:
    case KvCacheDtype::kBF16: l.value_bytes = 2; break;
    case KvCacheDtype::kFp8:
    case KvCacheDtype::kQ8_0:
      l.value_bytes = 1;
      l.scales_per_head = (head_dim + kKvScaleBlock - 1) / kKvScaleBlock;
      break;
  }
  l.tile_bytes = int64_t{block_size} * (int64_t{head_dim} * l.value_bytes + int64_t{l.scales_per_head} * 2);
  l.head_stride = num_blocks * l.tile_bytes;
  return l;
}

void store_kv(const KvLayout& l, const float* src, uint8_t* arena, int64_t block, int32_t slot) {
  for (int32_t h = 0; h < l.num_kv_heads; ++h) {
    const float* x = src + int64_t{h} * l.head_dim;
    uint8_t* values = arena + l.value_offset(block, h, slot);
    switch (l.dtype) {
      case KvCacheDtype::kAuto:
      case KvCacheDtype::kF32: std::memcpy(values, x, static_cast<size_t>(l.head_dim) * 4); break;
      case KvCacheDtype::kF16: to_f16(x, l.head_dim, values); break;
      case KvCacheDtype::kBF16:
        for (int32_t d = 0; d < l.head_dim; ++d) {
          const uint16_t bits = f32_to_bf16(x[d]);
          std::memcpy(values + 2 * d, &bits, 2);
        }
        break;
      case KvCacheDtype::kFp8:
      case KvCacheDtype::kQ8_0:
        for (int32_t b = 0; b < l.scales_per_head; ++b) {
          const int32_t first = b * kKvScaleBlock, count = std::min(kKvScaleBlock, l.head_dim - first);
          quantize_block(l.dtype, x + first, count, values + first, arena + l.scale_offset(block, h, slot) + 2 * b);
        }
        break;
    }
  }
}

void load_kv_head(const KvLayout& l, const uint8_t* arena, int64_t block, int32_t slot, int32_t head, float* dst) {
  const uint8_t* values = arena + l.value_offset(block, head, slot);
  switch (l.dtype) {
    case KvCacheDtype::kAuto:
    case KvCacheDtype::kF32: return dtype_to_f32(DType::kF32, values, dst, l.head_dim);
    case KvCacheDtype::kF16:
      if (isa_supported(Isa::kAvx2)) return from_f16_f16c(values, l.head_dim, dst);  // AVX2 here implies F16C
      return dtype_to_f32(DType::kF16, values, dst, l.head_dim);
    case KvCacheDtype::kBF16: return dtype_to_f32(DType::kBF16, values, dst, l.head_dim);
    case KvCacheDtype::kFp8:
    case KvCacheDtype::kQ8_0: break;
  }
  static const E4m3Table fp8;
  for (int32_t b = 0; b < l.scales_per_head; ++b) {
    uint16_t stored;
    std::memcpy(&stored, arena + l.scale_offset(block, head, slot) + 2 * b, 2);
    const float scale = f16_to_f32(stored);
    const int32_t end = std::min(l.head_dim, (b + 1) * kKvScaleBlock);
    for (int32_t d = b * kKvScaleBlock; d < end; ++d) {
      const float code = l.dtype == KvCacheDtype::kFp8 ? fp8.value[values[d]]
                                                       : static_cast<float>(static_cast<int8_t>(values[d]));
      dst[d] = scale * code;
    }
  }
}

float e4m3_to_f32(uint8_t code) {
  const int exponent = (code >> 3) & 15, mantissa = code & 7;
  const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -9)
                                        : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return code & 0x80 ? -magnitude : magnitude;
}

uint8_t f32_to_e4m3(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (a != a) return 0;
  if (a >= 448.0f) return sign | 0x7e;
  if (a < 0.015625f) {  // below 2^-6: subnormal codes, multiples of 2^-9 (8 x 2^-9 is the first normal)
    return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
  }
  // Keep 3 mantissa bits of the f32, rounding to nearest even; a carry out of
  // the mantissa moves to the next exponent, as it should.
  uint32_t bits;
  std::memcpy(&bits, &a, 4);
  bits += 0x7ffffu + ((bits >> 20) & 1u);
  const int exponent = static_cast<int>(bits >> 23) - 127 + 7;
  const auto code = static_cast<uint32_t>(exponent << 3) | ((bits >> 20) & 7u);
  return static_cast<uint8_t>(sign | std::min<uint32_t>(code, 0x7e));
}

}  // namespace zl::cpu
