#include "kernels/cpu/rope.h"

#include <cmath>

namespace zl::cpu {

void rope_f32(float* x, int32_t num_heads, int32_t head_dim, int32_t pos, const float* inv_freq,
              bool interleaved, int32_t rotary_dim, float mscale) {
  const int32_t half = (rotary_dim > 0 ? rotary_dim : head_dim) / 2;
  // One cos/sin per pair, shared by every head. head_dim <= 4096 (validated).
  float cos_table[2048], sin_table[2048];
  for (int32_t i = 0; i < half; ++i) {
    float angle = static_cast<float>(pos) * inv_freq[i];
    // transformers: cos = emb.cos() * attention_scaling (exact when it is 1).
    cos_table[i] = std::cos(angle) * mscale;
    sin_table[i] = std::sin(angle) * mscale;
  }
  for (int32_t h = 0; h < num_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int32_t i = 0; i < half; ++i) {
      int32_t a = interleaved ? 2 * i : i;
      int32_t b = interleaved ? 2 * i + 1 : i + half;
      float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos_table[i] - x1 * sin_table[i];
      v[b] = x1 * cos_table[i] + x0 * sin_table[i];
    }
  }
}

}  // namespace zl::cpu
