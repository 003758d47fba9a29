// The weights of a Llama-family model as the f32 forward pass reads them.
// Pointers refer either into a mapped file (f32 tensors used in place) or
// into storage this struct owns (tensors converted or generated at load).
// Shapes follow PyTorch: a Linear weight is [out_features, in_features].
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "model/config.h"
#include "model/tensor_index.h"

namespace zl {

struct LayerWeights {
  const float* attn_norm = nullptr;  // [dim]
  const float* wq = nullptr;         // [q_dim, dim]
  const float* wk = nullptr;         // [kv_dim, dim]
  const float* wv = nullptr;         // [kv_dim, dim]
  const float* bq = nullptr;         // [q_dim], only with attention_bias
  const float* bk = nullptr;         // [kv_dim]
  const float* bv = nullptr;         // [kv_dim]
  const float* wo = nullptr;         // [dim, q_dim]
  const float* ffn_norm = nullptr;   // [dim]
  const float* w_gate = nullptr;     // [hidden_dim, dim]
  const float* w_up = nullptr;       // [hidden_dim, dim]
  const float* w_down = nullptr;     // [dim, hidden_dim]
};

struct ModelWeights {
  const float* tok_embeddings = nullptr;  // [vocab_size, dim]
  std::vector<LayerWeights> layers;       // [num_layers]
  const float* final_norm = nullptr;      // [dim]
  const float* lm_head = nullptr;         // [vocab_size, dim]; == tok_embeddings when tied

  // Backing storage: owned f32 buffers, and the files pointers may refer into.
  std::vector<std::unique_ptr<float[]>> owned;
  std::vector<std::shared_ptr<MappedFile>> files;

  float* allocate(int64_t num_elems);
};

// How a file format names the tensors of a Llama-family model.
enum class TensorNaming { kHuggingFace, kGguf };

// One tensor a model needs: its name in the file and its expected shape.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool required = true;
};

// The tensors the architecture needs, in load order. Layer-wise roles are
// filled into LayerWeights by the same order (see weights.cpp).
std::vector<TensorSpec> expected_tensors(const ModelConfig& config, TensorNaming naming);

// Checks that every required tensor is present with its expected shape. The
// message names the file, the tensor and what is wrong.
Status check_tensors(const ModelConfig& config, const TensorIndex& tensors, TensorNaming naming,
                     const std::string& source);

// Converts (or maps) the tensors into f32 weights. progress(done, total) is
// called after each tensor, for a progress bar.
StatusOr<ModelWeights> load_weights(const ModelConfig& config, const TensorIndex& tensors,
                                    TensorNaming naming, const std::string& source,
                                    const std::function<void(int, int)>& progress = {});

}  // namespace zl
