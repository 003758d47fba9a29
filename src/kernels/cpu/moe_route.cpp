#include "kernels/cpu/moe_route.h"

#include <algorithm>
#include <cmath>

namespace zl::cpu {

void route_top_k(const float* logits, int32_t num_experts, int32_t k, bool renormalize, int32_t* ids,
                 float* weights) {
  float max = logits[0];
  for (int32_t e = 1; e < num_experts; ++e) max = std::max(max, logits[e]);
  float sum = 0.0f;
  for (int32_t e = 0; e < num_experts; ++e) sum += std::exp(logits[e] - max);
  // Selection by logit is selection by probability (softmax is monotonic);
  // k passes over the experts, each taking the largest not yet taken. E and
  // k are small (128 and 8 for Qwen3-30B-A3B).
  for (int32_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int32_t e = 0; e < num_experts; ++e) {
      if (std::find(ids, ids + j, e) != ids + j) continue;
      if (best < 0 || logits[e] > logits[best]) best = e;
    }
    ids[j] = best;
  }
  std::sort(ids, ids + k);
  float top_sum = 0.0f;
  for (int32_t j = 0; j < k; ++j) {
    weights[j] = std::exp(logits[ids[j]] - max) / sum;
    top_sum += weights[j];
  }
  if (renormalize)
    for (int32_t j = 0; j < k; ++j) weights[j] /= top_sum;
}

}  // namespace zl::cpu
