#include "kernels/cpu/rmsnorm.h"

#include <cmath>

#include "kernels/cpu/clones.h"
#include "kernels/cpu/matmul.h"

namespace zl::cpu {

ZL_CPU_CLONES
void rmsnorm_f32(const float* x, const float* weight, float* y, int64_t num_rows, int64_t dim,
                 float eps) {
  for (int64_t r = 0; r < num_rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    float mean_sq = dot_f32(xr, xr, dim) / static_cast<float>(dim);
    float scale = 1.0f / std::sqrt(mean_sq + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = weight[i] * (xr[i] * scale);
  }
}

}  // namespace zl::cpu
