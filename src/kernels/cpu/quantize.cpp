#include "kernels/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/clones.h"

namespace zl::cpu {

namespace {

uint16_t store_f16(float v, uint8_t* dst) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(dst, &h, 2);
  return h;
}

// round(v / unit) clamped to [lo, hi]; 0 when unit is 0.
int round_in(float v, float unit, int lo, int hi) {
  if (unit == 0.0f) return 0;
  return std::clamp(static_cast<int>(std::lround(v / unit)), lo, hi);
}

// Codes 0..31 of a Q5 block into its qh (bit j: code j's bit 4) and qs
// (byte j: code j's low nibble, code j + 16's in the high nibble).
void store_q5_codes(const uint8_t* codes, uint8_t* qh_qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>(codes[j] >> 4) << j;
  for (int i = 0; i < 4; ++i) qh_qs[i] = static_cast<uint8_t>(qh >> (8 * i));
  for (int j = 0; j < 16; ++j) qh_qs[4 + j] = static_cast<uint8_t>((codes[j] & 0x0f) | (codes[j + 16] & 0x0f) << 4);
}

// The value of largest magnitude in a block of 32, with its sign (the first
// such on ties, as ggml's reference quantizers pick it).
float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

}  // namespace

void quantize_row_q8_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 34) {
    const float* x = src + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const Int8Scale s = int8_scale(amax);
    store_f16(s.scale, dst);
    for (int j = 0; j < 32; ++j) dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * s.inverse)));
  }
}

void quantize_row_q4_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 18) {
    const float* x = src + b * 32;
    // The value of largest magnitude, with its sign, maps to -8.
    const float d = signed_absmax(x) / -8.0f;
    const float id = finite_inverse(d);
    store_f16(d, dst);
    for (int j = 0; j < 16; ++j) {
      int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
      dst[2 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_row_q5_0(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 22) {
    const float* x = src + b * 32;
    // As Q4_0: the value of largest magnitude, with its sign, maps to -16.
    const float d = signed_absmax(x) / -16.0f;
    const float id = finite_inverse(d);
    store_f16(d, dst);
    uint8_t codes[32];
    for (int j = 0; j < 32; ++j)
      codes[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f))));
    store_q5_codes(codes, dst + 2);
  }
}

void quantize_row_q5_1(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, dst += 24) {
    const float* x = src + b * 32;
    // x ~ d * code + min over the block's [min, max], codes 0..31.
    float min = x[0], max = x[0];
    for (int j = 1; j < 32; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 31.0f;
    const float id = finite_inverse(d);
    store_f16(d, dst);
    store_f16(min, dst + 2);
    uint8_t codes[32];
    for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    store_q5_codes(codes, dst + 4);
  }
}

void quantize_row_q4_k(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t sb = 0; sb < n / 256; ++sb, dst += 144) {
    const float* x = src + sb * 256;
    // Block j: x ~ scale_j * q - min_j, q in 0..15, over its [lo, hi] (lo <= 0).
    float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      float lo = 0.0f, hi = x[32 * j];
      for (int i = 0; i < 32; ++i) {
        lo = std::min(lo, x[32 * j + i]);
        hi = std::max(hi, x[32 * j + i]);
      }
      scale[j] = (hi - lo) / 15.0f;
      min[j] = -lo;
      max_scale = std::max(max_scale, scale[j]);
      max_min = std::max(max_min, min[j]);
    }
    const float d = f16_to_f32(store_f16(max_scale / 63.0f, dst));
    const float dmin = f16_to_f32(store_f16(max_min / 63.0f, dst + 2));
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>(round_in(scale[j], d, 0, 63));
      m[j] = static_cast<uint8_t>(round_in(min[j], dmin, 0, 63));
    }
    uint8_t* s = dst + 4;  // the 12 scale bytes (kquant_scales in core/dtype.cpp reads them back)
    for (int j = 0; j < 4; ++j) {
      s[j] = static_cast<uint8_t>(sc[j] | (sc[j + 4] >> 4) << 6);
      s[j + 4] = static_cast<uint8_t>(m[j] | (m[j + 4] >> 4) << 6);
      s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0f) | (m[j + 4] & 0x0f) << 4);
    }
    uint8_t* qs = dst + 16;  // block 2c: low nibbles of qs[32c..], block 2c + 1: high nibbles
    std::memset(qs, 0, 128);
    for (int j = 0; j < 8; ++j) {
      const float step = d * static_cast<float>(sc[j]), offset = dmin * static_cast<float>(m[j]);
      for (int i = 0; i < 32; ++i)
        qs[32 * (j / 2) + i] |= static_cast<uint8_t>(round_in(x[32 * j + i] + offset, step, 0, 15) << (4 * (j % 2)));
    }
  }
}

void quantize_row_q6_k(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t sb = 0; sb < n / 256; ++sb, dst += 210) {
    const float* x = src + sb * 256;
    // Half block k (16 values): x ~ scale_k * q, q in -32..31.
    float scale[16], max_scale = 0.0f;
    for (int k = 0; k < 16; ++k) {
      float amax = 0.0f;
      for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(x[16 * k + i]));
      scale[k] = amax / 31.0f;
      max_scale = std::max(max_scale, scale[k]);
    }
    const float d = f16_to_f32(store_f16(max_scale / 127.0f, dst + 208));
    int8_t* sc = reinterpret_cast<int8_t*>(dst + 192);
    for (int k = 0; k < 16; ++k) sc[k] = static_cast<int8_t>(round_in(scale[k], d, 0, 127));
    // Value e = 128 h + 32 g + l: low 4 bits of u = q + 32 in ql[64 h + 32 (g % 2) + l]
    // (high nibble when g >= 2), its top 2 bits at bit 2 g of qh[32 h + l].
    uint8_t* ql = dst;
    uint8_t* qh = dst + 128;
    std::memset(dst, 0, 192);
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, g = e % 128 / 32, l = e % 32;
      const int u = round_in(x[e], d * static_cast<float>(sc[e / 16]), -32, 31) + 32;
      ql[64 * h + 32 * (g % 2) + l] |= static_cast<uint8_t>((u & 0x0f) << (g >= 2 ? 4 : 0));
      qh[32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * g));
    }
  }
}

float quantize_row_i8(const float* src, int8_t* dst, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
  const Int8Scale s = int8_scale(amax);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<int8_t>(std::nearbyint(src[i] * s.inverse));
  return s.scale;
}

// Plain loops the compiler vectorizes for each target; nearbyint under the
// default rounding mode is round-half-even, as the vector conversion is.
ZL_CPU_CLONES
void quantize_activations(const float* x, int64_t num_rows, int64_t n, int8_t* q, float* d, float* ds) {
  const int64_t num_blocks = n / 32;
  for (int64_t r = 0; r < num_rows; ++r) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      const float* xb = x + r * n + b * 32;
      int8_t* qb = q + r * n + b * 32;
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
      const Int8Scale s = int8_scale(amax);
      int sum = 0;
      for (int j = 0; j < 32; ++j) {
        int v = static_cast<int>(std::nearbyint(xb[j] * s.inverse));
        qb[j] = static_cast<int8_t>(v);
        sum += v;
      }
      activation_block_scales(s.scale, sum, d + r * num_blocks + b, ds + r * num_blocks + b);
    }
  }
}

void half_block_sums(const int8_t* q, int64_t num_rows, int64_t n, int32_t* sums) {
  for (int64_t h = 0; h < num_rows * n / 16; ++h) {
    int32_t sum = 0;
    for (int i = 0; i < 16; ++i) sum += q[16 * h + i];
    sums[h] = sum;
  }
}

}  // namespace zl::cpu
