// The weights of a decoder model as the forward pass reads them. Weight
// matrices keep their stored format (f32, f16, bf16, Q8_0, Q4_0) and point
// into the mapped file, unless a WeightFormat asks for a conversion at load
// (then they point into storage this struct owns). Norm weights and biases
// are always f32. Shapes follow PyTorch: a Linear weight is
// [out_features, in_features].
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "kernels/cpu/matmul.h"
#include "model/config.h"
#include "model/tensor_index.h"
#include "zerolayer/status.h"
#include "zerolayer/weight_format.h"

namespace zl {

// One expert of a mixture-of-experts layer: a gated MLP,
// down(act(gate(x)) * up(x)).
struct ExpertWeights {
  WeightMatrix w_gate;  // [expert_hidden_dim, dim]
  WeightMatrix w_up;    // [expert_hidden_dim, dim]
  WeightMatrix w_down;  // [dim, expert_hidden_dim]
};

// Optional parts are null (matrices: data null) unless the recipe
// (ModelConfig) has them.
struct LayerWeights {
  const float* attn_norm = nullptr;  // [dim]
  WeightMatrix wq;                   // [q_dim, dim]
  WeightMatrix wk;                   // [kv_dim, dim]
  WeightMatrix wv;                   // [kv_dim, dim]
  const float* bq = nullptr;         // [q_dim], only with qkv_bias
  const float* bk = nullptr;         // [kv_dim]
  const float* bv = nullptr;         // [kv_dim]
  const float* q_norm = nullptr;     // [head_dim], only with qk_norm
  const float* k_norm = nullptr;     // [head_dim]
  WeightMatrix wo;                   // [dim, q_dim]
  const float* bo = nullptr;         // [dim], only with o_bias
  const float* post_attn_norm = nullptr;  // [dim], only with post_norms
  const float* ffn_norm = nullptr;   // [dim]
  WeightMatrix w_gate;               // [hidden_dim, dim], a dense MLP's
  WeightMatrix w_up;                 // [hidden_dim, dim]
  WeightMatrix w_down;               // [dim, hidden_dim]
  WeightMatrix router;               // [num_experts, dim], only with experts (is_moe)
  std::vector<ExpertWeights> experts;  // [num_experts], in place of w_gate, w_up, w_down
  const float* post_ffn_norm = nullptr;  // [dim], only with post_norms

  // f(WeightMatrix&) for every matrix the layer has (the experts' too).
  template <typename Self, typename F>
  static void for_each_matrix(Self& self, F&& f) {
    for (auto* m : {&self.wq, &self.wk, &self.wv, &self.wo, &self.w_gate, &self.w_up, &self.w_down, &self.router})
      if (m->data != nullptr) f(*m);
    for (auto& e : self.experts)
      for (auto* m : {&e.w_gate, &e.w_up, &e.w_down})
        if (m->data != nullptr) f(*m);
  }
};

struct ModelWeights {
  WeightMatrix tok_embeddings;        // [vocab_size, dim]; rows dequantized on lookup
  std::vector<LayerWeights> layers;   // [num_layers]
  const float* final_norm = nullptr;  // [dim]
  WeightMatrix lm_head;               // [vocab_size, dim]; == tok_embeddings when tied

  // Backing storage: owned buffers (64-byte aligned), and the files pointers
  // may refer into.
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::vector<std::unique_ptr<uint8_t[], FreeDeleter>> owned;
  std::vector<std::shared_ptr<MappedFile>> files;

  float* allocate(int64_t num_elems);
  uint8_t* allocate_bytes(int64_t num_bytes);
  // Bytes of all weight matrices (what a dense model's decode step streams;
  // a mixture-of-experts step reads only the experts its tokens chose),
  // lm_head once.
  int64_t matrix_bytes() const;
};

// Gives every bf16 / f16 / Q8_0 / Q4_0 / I8 / Q4_K / Q6_K matrix of the layers and the classifier a
// packed copy (cpu::pack_matrix, owned by `weights`) when the AVX-512 kernels
// run, which read only that copy (Q5_0 / Q5_1 have no packed layout: read as
// stored). The originals stay valid (the embedding lookup, GGUF export and
// the CUDA upload read them): pages of a mapped file
// are released (MADV_DONTNEED; re-read from the file if ever touched), so a
// mapped model is not held twice; matrices converted at load keep their
// owned copy as well (about twice their size in memory).
void pack_weights_for_cpu(ModelWeights& weights);

// How a file format names the tensors of a model.
enum class TensorNaming { kHuggingFace, kGguf };

// One per-layer tensor of an architecture (model/arch.h): its names after
// "model.layers.N." and after "blk.N." (empty: the format has no such
// tensor), its shape, and where it goes.
struct LayerTensor {
  using VecSlot = const float* LayerWeights::*;
  using MatSlot = WeightMatrix LayerWeights::*;
  using ExpertSlot = WeightMatrix ExpertWeights::*;
  // A matrix's consecutive row ranges, in order: one part for a plain
  // projection, several for a fused one (q, k and v of one qkv tensor).
  struct Part {
    MatSlot mat;
    int64_t rows;
  };
  std::string hf_suffix;
  std::string gguf_suffix;
  std::vector<int64_t> shape;
  VecSlot vec = nullptr;     // a norm or a bias, f32 [shape[0]]; or
  std::vector<Part> parts;  // a matrix [rows, cols]
  bool is_norm = false;     // a norm weight (gets ModelConfig::norm_weight_offset)
  // An expert's matrix: expert `expert`'s (a tensor per expert, as Hugging
  // Face files hold them), or, with expert -1, every expert's, stacked
  // [num_experts, rows, cols] (GGUF's merged ffn_*_exps).
  ExpertSlot expert_mat = nullptr;
  int32_t expert = -1;

  bool in(TensorNaming naming) const { return !(naming == TensorNaming::kGguf ? gguf_suffix : hf_suffix).empty(); }

  static LayerTensor norm(std::string hf, std::string gguf, int64_t n, VecSlot vec) {
    return {std::move(hf), std::move(gguf), {n}, vec, {}, true};
  }
  static LayerTensor bias(std::string hf, std::string gguf, int64_t n, VecSlot vec) {
    return {std::move(hf), std::move(gguf), {n}, vec, {}, false};
  }
  static LayerTensor matrix(std::string hf, std::string gguf, int64_t rows, int64_t cols, MatSlot mat) {
    return {std::move(hf), std::move(gguf), {rows, cols}, nullptr, {{mat, rows}}, false};
  }
  static LayerTensor expert_matrix(std::string hf, int32_t expert, int64_t rows, int64_t cols, ExpertSlot slot) {
    return {std::move(hf), "", {rows, cols}, nullptr, {}, false, slot, expert};
  }
  static LayerTensor stacked_experts(std::string gguf, int32_t num_experts, int64_t rows, int64_t cols,
                                     ExpertSlot slot) {
    return {"", std::move(gguf), {num_experts, rows, cols}, nullptr, {}, false, slot, -1};
  }
};

// One tensor a model needs: its name in the file and its expected shape.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool required = true;
  bool weight = true;  // false: read into the config, not loaded (GGUF rope factors)
};

// The tensors the architecture (config.arch) needs, in load order.
std::vector<TensorSpec> expected_tensors(const ModelConfig& config, TensorNaming naming);

// Parameter count (weights only), for logs and `check`.
int64_t config_num_params(const ModelConfig& config);

// Checks that every required tensor is present with its expected shape, and
// that the file holds no tensor the recipe would leave unread (nothing is
// silently dropped). The message names the file, the tensor and what is wrong.
Status check_tensors(const ModelConfig& config, const TensorIndex& tensors, TensorNaming naming,
                     const std::string& source);

// One [rows, cols] tensor as a WeightMatrix in `format`: in place when it is
// stored that way, otherwise converted into storage owned by `weights`.
StatusOr<WeightMatrix> convert_matrix(const TensorInfo& info, const WeightFormat& format, ModelWeights& weights);

// Binds (maps, or converts as `format` asks) the tensors. progress(done,
// total) is called after each tensor, for a progress bar.
StatusOr<ModelWeights> load_weights(const ModelConfig& config, const TensorIndex& tensors,
                                    TensorNaming naming, const std::string& source,
                                    const std::function<void(int, int)>& progress = {},
                                    const WeightFormat& format = {});

}  // namespace zl
