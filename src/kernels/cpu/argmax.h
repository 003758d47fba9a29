// Greedy decoding's last step: the index of each row's largest logit.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace zl::cpu {

// Index of the largest of x[0, n), the lowest on ties (as torch.argmax); 0 if
// every value is NaN.
int32_t argmax_f32(const float* x, int64_t n);

// out[r] = argmax_f32(x + r * n, n) for r in [0, num_rows); x: [num_rows, n].
// Rows are split over the pool.
void argmax_rows_f32(ThreadPool& pool, const float* x, int64_t num_rows, int64_t n, int32_t* out);

}  // namespace zl::cpu
