// The Llama forward pass on one CUDA device, behind the same ForwardBatch
// interface as the CPU's LlamaModel (which delegates to it when the engine
// runs with --device cuda:N). At creation the weight matrices are converted
// to bf16 and uploaded once (q/k/v stacked into one matrix, gate/up into
// another, so a layer is four GEMMs), the KV pool is allocated in device
// memory (bf16, [num_layers, num_blocks * block_size, kv_dim] for k and for
// v), and every activation buffer is sized for max_batch_tokens.
//
// A step's metadata reaches the device in one copy (model/cuda_plan.h). A
// plain decode step (one token per sequence, up to 256 sequences) runs as a
// CUDA graph captured per batch bucket (1, 2, 4, ... 256): the first step of
// a bucket runs eagerly (making cuBLASLt plans), then is captured, and later
// steps replay it. Other steps (prefill, mixed) run eagerly.
//
// Greedy decoding's argmax runs on the device, inside the step (and its
// graph), so a step of plain-greedy rows copies back one id per row instead
// of [rows, vocab] logits. Other sampling modes still take the logits to the
// host; kernels/cuda/sampling.h holds the device sampler a later step will
// put inside the graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/config.h"
#include "model/llama.h"
#include "model/weights.h"
#include "zerolayer/status.h"

namespace zl {

struct CudaModelOptions {
  int32_t device_index = 0;
  int32_t max_batch_tokens = 2048;  // tokens in one forward pass at most
  int32_t max_num_seqs = 256;       // chunks / logit rows in one pass at most
  int32_t block_size = 16;          // tokens per KV block
  int64_t kv_cache_bytes = 0;       // KV pool bytes; 0: kv_cache_fraction of the free memory left
  double kv_cache_fraction = 0.9;
  bool use_graphs = true;           // capture decode steps (false: always eager)
  // Every logits row independent of the batch around it, bit for bit: one
  // GEMM algorithm per shape for all token counts (kernels/cuda/matmul.h)
  // and decode attention through the prefill kernel, whose order over the
  // keys is the same however a token is batched (no split-k).
  bool batch_invariant = false;
};

// The CUDA forward pass implements the Llama recipe with q/k/v biases; a
// model that needs more (model/config.h recipe_features) is refused by
// create() with this error, never run with a step left out.
inline Status cuda_supports(const ModelConfig& config) {
  return require_features(config, {"qkv_bias"}, "the CUDA backend");
}

class CudaLlamaModel {
 public:
  // Errors: "built without CUDA", "no CUDA device ...", out of device memory,
  // or a shape the kernels do not support (head_dim > 256).
  static StatusOr<std::unique_ptr<CudaLlamaModel>> create(const ModelConfig& config, const ModelWeights& weights,
                                                          const CudaModelOptions& options);
  ~CudaLlamaModel();

  int32_t num_kv_blocks() const;
  // One line for logs: device, weights and KV pool sizes.
  std::string description() const;

  // As LlamaModel::forward, on a batch it has validated; logits land in host
  // memory, [logit_rows.size(), vocab_size], unless greedy_only (then only
  // greedy_tokens, [logit_rows.size()], is written). Waits for the step.
  Status forward(const ForwardBatch& batch, float* logits, int32_t* greedy_tokens = nullptr, bool greedy_only = false);
  // The same step, queued without waiting and without copying logits back
  // (benchmarks: back-to-back steps); synchronize() waits for it.
  Status enqueue(const ForwardBatch& batch);
  Status synchronize();

  // Device time of the last step that forward() waited for, and how long the
  // device sat idle between the end of the step before it and its start
  // (host scheduling, sampling, metadata copy), from CUDA events.
  struct StepTiming {
    float gpu_ms = 0.0f;
    float idle_before_ms = -1.0f;  // -1: no step before it
  };
  StepTiming last_step_timing() const;
  // Copies one KV block in every layer (the engine's compaction).
  void copy_block(int32_t src, int32_t dst);

 private:
  struct Impl;
  explicit CudaLlamaModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl
