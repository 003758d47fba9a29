#include "kernels/cpu/activation.h"

#include <cmath>

namespace zl::cpu {

void swiglu_f32(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace zl::cpu
