// The mixture-of-experts MLP of a decoder layer (Mixtral, Qwen3-MoE) over
// one step's tokens. Each token is routed to its top-k experts; the tokens
// are then grouped by expert, so that a step streams each chosen expert's
// weights once for all the tokens that chose it (one grouped matmul for
// every expert's gate and up, one for the downs), and each token's output is
// the weighted sum of its experts' outputs in ascending expert order. A
// token's result depends on nothing else in the batch (the kernels give a
// row the same bits whatever the rows beside it): batch-invariant.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_vector.h"
#include "core/thread_pool.h"
#include "kernels/cpu/matmul.h"
#include "model/config.h"
#include "model/weights.h"

namespace zl {

// gate = act(gate) * up over [n] (the gated MLPs' activation).
void gated_activation(Activation activation, float* gate, const float* up, int64_t n);

// Runs fn(begin, end) over ranges of the step's tokens: on the pool for a
// prefill, inline when the step is too small to repay waking the workers
// (decode). For the per-token and elementwise ops between the matmuls, which
// give each element the same bits however the tokens are split.
template <typename F>
void for_token_ranges(ThreadPool& pool, int64_t num_tokens, int64_t elems_per_token, F&& fn) {
  if (num_tokens * elems_per_token < (1 << 16)) return fn(int64_t{0}, num_tokens);
  pool.parallel_for(num_tokens, fn);
}

class MoeMlp {
 public:
  // Scratch for up to max_batch_tokens tokens (T), allocated here once.
  MoeMlp(const ModelConfig& config, int32_t max_batch_tokens);

  // out = the layer's experts applied to xb. xb, out: [num_tokens, dim].
  void forward(ThreadPool& pool, const LayerWeights& w, const float* xb, int64_t num_tokens, float* out);
  // Experts run so far, counting each once per forward in which it had
  // tokens: the expert weights streamed, in units of one expert (benchmarks).
  int64_t expert_runs() const { return expert_runs_; }

 private:
  // Fills ids_ / weights_ and the grouped order (offsets_, row_token_, slot_row_).
  void route(ThreadPool& pool, const LayerWeights& w, const float* xb, int64_t num_tokens);

  const ModelConfig& config_;
  const int32_t k_;
  AlignedVector<float> logits_;       // [T, num_experts] router logits
  std::vector<int32_t> ids_;          // [T, k] each token's experts, ascending
  std::vector<float> weights_;        // [T, k] and their weights
  std::vector<int32_t> offsets_;      // [num_experts + 1] first grouped row of each expert
  std::vector<int32_t> row_token_;    // [T * k] the token of each grouped row
  std::vector<int32_t> slot_row_;     // [T, k] the grouped row of each token's slot
  std::vector<float> x_;              // [T * k, dim] xb's rows in grouped order
  AlignedVector<float> gate_;         // [T * k, expert_hidden_dim]
  AlignedVector<float> up_;           // [T * k, expert_hidden_dim]
  AlignedVector<float> down_;         // [T * k, dim]
  std::vector<cpu::MatmulTarget> targets_;  // [2 * num_experts]
  std::vector<cpu::MatmulGroup> groups_;    // [num_experts]
  int64_t expert_runs_ = 0;
};

}  // namespace zl
