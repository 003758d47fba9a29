#include "kernels/cpu/quantize.h"

#include <cmath>
#include <cstring>

#include "core/dtype.h"

namespace zl::cpu {

void quantize_row_q8_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 34) {
    const float* x = src + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t dh = f32_to_f16(d);
    std::memcpy(dst, &dh, 2);
    for (int j = 0; j < 32; ++j) dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
  }
}

void quantize_row_q4_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 18) {
    const float* x = src + b * 32;
    // The value of largest magnitude, with its sign, maps to -8.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t dh = f32_to_f16(d);
    std::memcpy(dst, &dh, 2);
    for (int j = 0; j < 16; ++j) {
      int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
      dst[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

float quantize_row_i8(const float* src, int8_t* dst, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
  const float scale = amax / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int8_t>(std::nearbyint(src[i] * inv));
  return scale;
}

// Plain loops the compiler vectorizes for each target; nearbyint under the
// default rounding mode is round-half-even, as the vector conversion is.
__attribute__((target_clones("avx512f", "fma", "default")))
void quantize_activations(const float* x, int64_t num_rows, int64_t n, int8_t* q, float* d, float* ds) {
  const int64_t num_blocks = n / 32;
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      const float* xb = x + r * n + b * 32;
      int8_t* qb = q + r * n + b * 32;
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
      const float scale = amax / 127.0f;
      const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
      int sum = 0;
      for (int j = 0; j < 32; ++j) {
        int v = static_cast<int>(std::nearbyint(xb[j] * inv));
        qb[j] = static_cast<int8_t>(v);
        sum += v;
      }
      d[r * num_blocks + b] = scale;
      ds[r * num_blocks + b] = scale * static_cast<float>(sum);
    }
  }
}

}  // namespace zl::cpu
