#include "model/moe.h"

#include <cstring>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/moe_route.h"

namespace zl {

void gated_activation(Activation activation, float* gate, const float* up, int64_t n) {
  switch (activation) {
    case Activation::kSilu: cpu::swiglu_f32(gate, up, gate, n); break;
    case Activation::kGeluTanh: cpu::gelu_tanh_glu_f32(gate, up, gate, n); break;
  }
}

MoeMlp::MoeMlp(const ModelConfig& config, int32_t max_batch_tokens)
    : config_(config), k_(config.experts_per_token) {
  const size_t t = static_cast<size_t>(max_batch_tokens), rows = t * static_cast<size_t>(k_);
  const size_t experts = static_cast<size_t>(config.num_experts);
  logits_.resize(t * experts);
  ids_.resize(rows);
  weights_.resize(rows);
  offsets_.resize(experts + 1);
  row_token_.resize(rows);
  slot_row_.resize(rows);
  x_.resize(rows * static_cast<size_t>(config.dim));
  gate_.resize(rows * static_cast<size_t>(config.expert_hidden_dim));
  up_.resize(rows * static_cast<size_t>(config.expert_hidden_dim));
  down_.resize(rows * static_cast<size_t>(config.dim));
  targets_.resize(2 * experts);
  groups_.resize(experts);
}

void MoeMlp::route(ThreadPool& pool, const LayerWeights& w, const float* xb, int64_t num_tokens) {
  const int32_t num_experts = config_.num_experts;
  cpu::matmul(pool, xb, w.router, nullptr, logits_.data(), num_tokens);
  for (int64_t t = 0; t < num_tokens; ++t)
    cpu::route_top_k(&logits_[t * num_experts], num_experts, k_, config_.norm_topk_prob, &ids_[t * k_],
                     &weights_[t * k_]);
  // Counting sort of the (token, slot) pairs by expert, tokens ascending.
  std::fill(offsets_.begin(), offsets_.end(), 0);
  const int64_t rows = num_tokens * k_;
  for (int64_t i = 0; i < rows; ++i) ++offsets_[ids_[i] + 1];
  for (int32_t e = 0; e < num_experts; ++e) offsets_[e + 1] += offsets_[e];
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t row = offsets_[ids_[i]]++;
    row_token_[row] = static_cast<int32_t>(i / k_);
    slot_row_[i] = row;
  }
  for (int32_t e = num_experts; e > 0; --e) offsets_[e] = offsets_[e - 1];
  offsets_[0] = 0;
}

void MoeMlp::forward(ThreadPool& pool, const LayerWeights& w, const float* xb, int64_t num_tokens, float* out) {
  const int64_t dim = config_.dim, hidden = config_.expert_hidden_dim, rows = num_tokens * k_;
  route(pool, w, xb, num_tokens);
  for_token_ranges(pool, rows, dim, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(&x_[r * dim], &xb[row_token_[r] * dim], static_cast<size_t>(dim) * sizeof(float));
  });

  // Every chosen expert's gate and up in one parallel section, then the downs.
  for (int32_t e = 0; e < config_.num_experts; ++e) {
    const ExpertWeights& ew = w.experts[static_cast<size_t>(e)];
    const int64_t first = offsets_[e], n = offsets_[e + 1] - first;
    targets_[2 * e] = {&ew.w_gate, nullptr, &gate_[first * hidden]};
    targets_[2 * e + 1] = {&ew.w_up, nullptr, &up_[first * hidden]};
    groups_[e] = {&x_[first * dim], n, std::span<const cpu::MatmulTarget>(&targets_[2 * e], 2)};
    expert_runs_ += n > 0;
  }
  cpu::matmul_groups(pool, groups_);
  for_token_ranges(pool, rows, hidden, [&](int64_t r0, int64_t r1) {
    gated_activation(config_.activation, &gate_[r0 * hidden], &up_[r0 * hidden], (r1 - r0) * hidden);
  });
  for (int32_t e = 0; e < config_.num_experts; ++e) {
    const int64_t first = offsets_[e], n = offsets_[e + 1] - first;
    targets_[2 * e] = {&w.experts[static_cast<size_t>(e)].w_down, nullptr, &down_[first * dim]};
    groups_[e] = {&gate_[first * hidden], n, std::span<const cpu::MatmulTarget>(&targets_[2 * e], 1)};
  }
  cpu::matmul_groups(pool, groups_);

  // out[t] = sum over t's experts, ascending, of weight * that expert's output.
  for_token_ranges(pool, num_tokens, dim * k_, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = &out[t * dim];
      for (int32_t j = 0; j < k_; ++j) {
        const float weight = weights_[t * k_ + j];
        const float* d = &down_[int64_t{slot_row_[t * k_ + j]} * dim];
        if (j == 0) {
          for (int64_t i = 0; i < dim; ++i) o[i] = weight * d[i];
        } else {
          for (int64_t i = 0; i < dim; ++i) o[i] += weight * d[i];
        }
      }
    }
  });
}

}  // namespace zl
