// The forward pass of a decoder on the CPU, for every family of model/arch/
// by the recipe its ModelConfig carries (norms, biases, q/k norm, sliding
// windows), batched from the start: one call computes a flat batch of tokens
// that belong to several sequences, each continuing from its own position
// with its own block table into the shared KV cache, and returns logits only
// for the rows asked for. The engine schedules prefill chunks and decode
// tokens of many requests into one such call.
//
// Buffers are sized for max_batch_tokens at construction; forward() never
// allocates (a batch larger than that is an error).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "zerolayer/status.h"

namespace zl {

// The part of one sequence in a batch: tokens [token_begin, token_begin +
// num_tokens) of the batch, at positions start_pos, start_pos + 1, ...
// (start_pos = tokens already in its KV memory). block_table must cover
// positions [0, start_pos + num_tokens). With a cache of window slots,
// window_table covers them too, its entries valid from the block of the first
// position the chunk's windows reach (start_pos - window + 1).
struct SeqChunk {
  int32_t token_begin = 0;
  int32_t num_tokens = 0;
  int32_t start_pos = 0;
  std::span<const int32_t> block_table = {};
  std::span<const int32_t> window_table = {};
};

struct ForwardBatch {
  std::span<const int32_t> tokens;      // [num_tokens]
  std::span<const SeqChunk> seqs;       // chunks cover tokens in order, without gaps
  std::span<const int32_t> logit_rows;  // batch rows whose logits are wanted, e.g. each chunk's last
};

class CudaLlamaModel;
class MoeMlp;

class LlamaModel {
 public:
  LlamaModel(const ModelConfig& config, const ModelWeights& weights, ThreadPool& pool,
             int32_t max_batch_tokens);
  ~LlamaModel();

  const ModelConfig& config() const { return config_; }
  int32_t max_batch_tokens() const { return max_batch_tokens_; }
  // The CPU threads forward() runs on; free between two calls.
  ThreadPool& pool() const { return pool_; }

  // logits: [logit_rows.size(), vocab_size]. greedy_tokens, if given:
  // [logit_rows.size()], each logits row's argmax (greedy decoding's token,
  // found by the pool while the rows are still in cache, or on the device).
  // greedy_only: the caller reads greedy_tokens alone, so a device model
  // need not copy the logits back (the CPU writes them regardless). Errors
  // (bad ids, positions past max_seq_len, a block table too short) are
  // reported before any work.
  Status forward(const ForwardBatch& batch, KvCache& cache, float* logits, int32_t* greedy_tokens = nullptr,
                 bool greedy_only = false);

  // Mixture of experts: the expert MLPs run so far over all layers and
  // calls, each counted once per layer and call in which it had tokens
  // (what a step streams of them, for benchmarks); 0 for a dense model.
  int64_t moe_expert_runs() const;

  // From now on forward() runs on that CUDA model (whose KV pool lives on
  // the device; `cache` then only names block ids and sizes).
  void use_cuda(std::unique_ptr<CudaLlamaModel> cuda);

 private:
  Status validate(const ForwardBatch& batch, const KvCache& cache) const;
  Status validate_window_table(const SeqChunk& chunk, const KvCache& cache) const;
  void forward_cpu(const ForwardBatch& batch, KvCache& cache, float* logits);
  void attention_block(int32_t layer, int64_t num_tokens, KvCache& cache);
  void mlp_block(int32_t layer, int64_t num_tokens);
  // xb = rmsnorm(x) x weight, and x += proj, over the step's tokens.
  void norm_into_xb(const float* weight, int64_t num_tokens);
  // proj = rmsnorm(proj) x weight (a post norm), then x += proj.
  void add_residual(const float* post_norm, int64_t num_tokens);

  struct Buffers;
  const ModelConfig config_;
  const ModelWeights& weights_;
  ThreadPool& pool_;
  const int32_t max_batch_tokens_;
  std::vector<float> inv_freq_;          // [head_dim / 2], rope frequencies after scaling
  std::vector<float> inv_freq_sliding_;  // [head_dim / 2], windowed layers' (rope_theta_sliding), or empty
  std::unique_ptr<Buffers> buf_;
  std::unique_ptr<MoeMlp> moe_;           // the experts' scratch, with num_experts > 0
  std::unique_ptr<CudaLlamaModel> cuda_;  // null: the CPU
};

// Rope frequencies 1 / theta^(2i/head_dim), adjusted for linear or llama3
// scaling exactly as transformers' rope init functions do.
std::vector<float> rope_inv_freq(const ModelConfig& config);
// The windowed layers' frequencies when they have a base of their own
// (rope_theta_sliding, unscaled); empty otherwise.
std::vector<float> rope_inv_freq_sliding(const ModelConfig& config);

}  // namespace zl
