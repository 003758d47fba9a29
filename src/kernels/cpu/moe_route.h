// Mixture-of-experts routing: which experts a token runs, and with what
// weight, from its router logits (as transformers' Mixtral and Qwen3-MoE
// routers compute them, and llama.cpp's softmax gating).
#pragma once

#include <cstdint>

namespace zl::cpu {

// One token: p = softmax(logits) over num_experts in f32 (max subtracted
// first), the k largest p (ties: the lower id first), and their weights:
// those p, divided by their sum when `renormalize`.
// logits: [num_experts]; ids, weights: [k], in ascending expert id, the
// order the experts' outputs are summed in (transformers' index_add_ order).
void route_top_k(const float* logits, int32_t num_experts, int32_t k, bool renormalize, int32_t* ids,
                 float* weights);

}  // namespace zl::cpu
