// The scalar reference of the matmul tile kernels: the definition the vector
// kernels are tested against. Float formats: f32 sums of exact products.
// Quantized formats: per block of 32, the exact integer dot of weight and
// activation codes, scaled by both block scales (I8: by the activation block
// scale, then the row scale at the end; super-block formats: each half
// block's integer dot by its weight scale, less the block's min times the
// activations' sum (Q2_K: each half's min times the half's sum); Q5_1: codes
// 0..31, plus the block's min m times the activations' sum, m * d_x * sum(q);
// IQ4_NL: its grid values as codes).
#include <cstring>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/matmul_kernels.h"

namespace zl::cpu {
namespace {

void tile_float(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                int64_t ldy) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(w.cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    w.row_to_f32(r, row.data());
    for (int64_t t = 0; t < in.num_tokens; ++t) {
      const float* x = in.x + t * in.cols;
      float sum = 0.0f;
      for (int64_t k = 0; k < w.cols; ++k) sum += row[static_cast<size_t>(k)] * x[k];
      y[t * ldy + r] = sum;
    }
  }
}

}  // namespace

void weight_block(const WeightMatrix& w, int64_t r, int64_t b, int8_t* codes, float* scale, float* min) {
  const uint8_t* p = w.row(r);
  uint16_t h;
  if (min != nullptr) *min = 0.0f;
  switch (w.dtype) {
    case DType::kQ8_0:
      p += b * 34;
      std::memcpy(&h, p, 2);
      *scale = f16_to_f32(h);
      std::memcpy(codes, p + 2, 32);
      return;
    case DType::kQ4_0:
      p += b * 18;
      std::memcpy(&h, p, 2);
      *scale = f16_to_f32(h);
      for (int j = 0; j < 16; ++j) {
        codes[j] = static_cast<int8_t>((p[2 + j] & 0x0f) - 8);
        codes[j + 16] = static_cast<int8_t>((p[2 + j] >> 4) - 8);
      }
      return;
    case DType::kQ5_0:
    case DType::kQ5_1: {
      const bool q5_0 = w.dtype == DType::kQ5_0;
      p += b * dtype_block_bytes(w.dtype);
      uint8_t u[32];
      q5_codes(w.dtype, p, u);
      for (int j = 0; j < 32; ++j) codes[j] = static_cast<int8_t>(q5_0 ? u[j] - 16 : u[j]);
      std::memcpy(&h, p, 2);
      *scale = f16_to_f32(h);
      if (!q5_0) {
        CHECK(min != nullptr) << "Q5_1 blocks have a min";
        std::memcpy(&h, p + 2, 2);
        *min = f16_to_f32(h);
      }
      return;
    }
    case DType::kIQ4_NL:
      p += b * 18;
      std::memcpy(&h, p, 2);
      *scale = f16_to_f32(h);
      iq4_codes(p + 2, codes);
      return;
    default:  // kI8
      std::memcpy(codes, p + b * 32, 32);
      *scale = 1.0f;
      return;
  }
}

namespace {

// Block b of 32 of a super-block row against each token:
//   y += d_x * (scale_0 * dot(codes[0:16], q[0:16]) + scale_1 * dot(codes[16:], q[16:])) - min * d_x * sum(q),
// and for Q2_K, whose halves have their own mins, - d_x * (min_0 * sum(q[0:16]) + min_1 * sum(q[16:])).
void kquant_block_dot(const WeightMatrix& w, const MatmulInput& in, int64_t r, int64_t b, float* y, int64_t ldy) {
  const int64_t num_blocks = w.cols / 32;
  int8_t codes[32];
  float scale[2], min[2];
  kquant_block(w.dtype, w.row(r) + b / 8 * dtype_block_bytes(w.dtype), static_cast<int>(b % 8), codes, scale, min);
  for (int64_t t = 0; t < in.num_tokens; ++t) {
    const int8_t* xq = in.xq + t * in.cols + b * 32;
    int32_t dot[2] = {0, 0};
    for (int j = 0; j < 32; ++j) dot[j / 16] += int32_t{codes[j]} * xq[j];
    const float dx = in.xd[t * num_blocks + b];
    float offset = min[0] * in.xds[t * num_blocks + b];
    if (w.dtype == DType::kQ2_K) {
      const int32_t* s16 = in.xsum16 + (t * num_blocks + b) * 2;
      offset = dx * (min[0] * static_cast<float>(s16[0]) + min[1] * static_cast<float>(s16[1]));
    }
    y[t * ldy + r] += dx * (scale[0] * static_cast<float>(dot[0]) + scale[1] * static_cast<float>(dot[1])) - offset;
  }
}

void tile_quantized(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                    int64_t ldy) {
  const int64_t num_blocks = w.cols / 32;
  int8_t codes[32];
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t t = 0; t < in.num_tokens; ++t) y[t * ldy + r] = 0.0f;
    if (dtype_has_super_blocks(w.dtype)) {
      for (int64_t b = 0; b < num_blocks; ++b) kquant_block_dot(w, in, r, b, y, ldy);
      continue;
    }
    for (int64_t b = 0; b < num_blocks; ++b) {
      float dw, min;
      weight_block(w, r, b, codes, &dw, &min);
      for (int64_t t = 0; t < in.num_tokens; ++t) {
        const int8_t* xq = in.xq + t * in.cols + b * 32;
        int32_t dot = 0;
        for (int j = 0; j < 32; ++j) dot += int32_t{codes[j]} * xq[j];
        y[t * ldy + r] += dw * in.xd[t * num_blocks + b] * static_cast<float>(dot);
        if (w.dtype == DType::kQ5_1) y[t * ldy + r] += min * in.xds[t * num_blocks + b];
      }
    }
    if (w.dtype == DType::kI8)
      for (int64_t t = 0; t < in.num_tokens; ++t) y[t * ldy + r] *= w.scales[r];
  }
}

}  // namespace

TileKernel tile_kernel_scalar(DType dtype) { return dtype_is_quantized(dtype) ? tile_quantized : tile_float; }

}  // namespace zl::cpu
