// The shape and hyper-parameters of a decoder-only Llama-family model, from
// whichever source (config.json, GGUF metadata, a dummy: preset). Validated
// once by validate_config; everything downstream trusts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace zl {

enum class Arch { kLlama, kMistral, kQwen2 };
const char* arch_name(Arch arch);

enum class RopeScalingType { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;                           // linear and llama3
  float low_freq_factor = 1.0f;                  // llama3
  float high_freq_factor = 4.0f;                 // llama3
  int32_t original_max_position_embeddings = 8192;  // llama3
};

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string source_arch;        // as the file named it, e.g. "LlamaForCausalLM", "llama"
  int32_t vocab_size = 0;
  int32_t dim = 0;                // hidden_size
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;           // usually dim / num_heads
  int32_t hidden_dim = 0;         // intermediate_size (SwiGLU)
  int32_t max_seq_len = 0;        // max_position_embeddings / context_length
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  // true: rotate pairs (2i, 2i+1) as llama.cpp's llama arch and llama2.c do,
  // with q/k weights stored in that order (GGUF llama). false: rotate
  // (i, i + head_dim/2) as transformers' rotate_half does (HF, GGUF qwen2).
  bool rope_interleaved = false;
  bool tie_word_embeddings = false;
  bool attention_bias = false;    // q/k/v projections have biases (Qwen2)
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;  // any of them ends generation

  int32_t q_dim() const { return num_heads * head_dim; }
  int32_t kv_dim() const { return num_kv_heads * head_dim; }
};

// Checks every field is positive and consistent (heads divide, head_dim even,
// ids within vocab). The message names the field; `source` names the file.
Status validate_config(const ModelConfig& config, const std::string& source);

// Parameter count (weights only), for logs and `check`.
int64_t config_num_params(const ModelConfig& config);

}  // namespace zl
