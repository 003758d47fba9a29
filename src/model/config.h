// The shape, hyper-parameters and layer recipe of a decoder-only model, from
// whichever source (config.json, GGUF metadata, a dummy: preset). The
// architecture file that read it (model/arch/<name>.cpp) sets the recipe
// fields; the forward passes only read them. Validated once by
// validate_config; everything downstream trusts it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerolayer/status.h"

namespace zl {

enum class RopeScalingType { kNone, kLinear, kLlama3, kLongRope };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;                           // linear and llama3
  float low_freq_factor = 1.0f;                  // llama3
  float high_freq_factor = 4.0f;                 // llama3
  int32_t original_max_position_embeddings = 8192;  // llama3, longrope
  // LongRoPE (Phi-3, "su"): each frequency i is divided by short_factor[i],
  // or by long_factor[i] when the context (max_seq_len) exceeds
  // original_max_position_embeddings, as llama.cpp decides; cos and sin are
  // multiplied by attention_factor. [rotary_dim / 2] each.
  std::vector<float> short_factor;
  std::vector<float> long_factor;
  float attention_factor = 1.0f;
};

// The MLP's gate activation: down(act(gate(x)) * up(x)).
enum class Activation { kSilu, kGeluTanh };
const char* activation_name(Activation activation);

struct ModelConfig {
  std::string arch = "llama";     // the architecture file that read it (model/arch.h)
  std::string source_arch;        // as the file named it, e.g. "LlamaForCausalLM", "llama"
  int32_t vocab_size = 0;
  int32_t dim = 0;                // hidden_size
  int32_t num_layers = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;           // usually dim / num_heads
  int32_t rotary_dim = 0;         // rotated values at the start of each head; 0: head_dim (Phi-3's partial rotary)
  int32_t hidden_dim = 0;         // intermediate_size
  int32_t max_seq_len = 0;        // max_position_embeddings / context_length
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScaling rope_scaling;
  // true: rotate pairs (2i, 2i+1) as llama.cpp's llama arch and llama2.c do,
  // with q/k weights stored in that order (GGUF llama). false: rotate
  // (i, i + head_dim/2) as transformers' rotate_half does (HF, GGUF qwen2).
  bool rope_interleaved = false;
  bool tie_word_embeddings = false;
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;  // any of them ends generation

  // The layer recipe. The defaults are Llama's: pre-norm RMSNorm, SwiGLU,
  // no biases, full causal attention scaled by 1/sqrt(head_dim).
  bool qkv_bias = false;          // q/k/v projections have biases (Qwen2, Llama attention_bias)
  bool o_bias = false;            // the output projection has a bias (Llama attention_bias)
  bool qk_norm = false;           // RMSNorm over each head of q and k before rope (Qwen3, Gemma 3)
  // RMSNorm of each block's output before it joins the residual stream
  // (Gemma 2 / 3: post_attention_layernorm, post_feedforward_layernorm).
  bool post_norms = false;
  // Added to every norm weight at load: Gemma's RMSNorm scales by (1 + w).
  // GGUF files hold the sum already (llama.cpp's converter adds it).
  float norm_weight_offset = 0.0f;
  Activation activation = Activation::kSilu;
  float embed_scale = 1.0f;       // token embeddings are multiplied by it (Gemma: sqrt(hidden))
  float attn_scale = 0.0f;        // attention scores' scale; 0: 1/sqrt(head_dim)
  // Soft-capping, x -> cap * tanh(x / cap), of the attention scores and of
  // the final logits (Gemma 2); 0: none.
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // Sliding-window attention: a windowed layer's token at position p attends
  // to positions (p - sliding_window, p] only. layer_sliding: [num_layers],
  // 1 for a windowed layer; empty when no layer is.
  int32_t sliding_window = 0;
  std::vector<uint8_t> layer_sliding;
  // > 0: windowed layers rotate with this base and no scaling (Gemma 3's
  // local layers); 0: every layer uses rope_theta and rope_scaling.
  float rope_theta_sliding = 0.0f;
  // Mixture of experts (Mixtral, Qwen3-MoE): num_experts > 0 replaces every
  // layer's MLP by num_experts gated MLPs of expert_hidden_dim. A router
  // ([num_experts, dim]) scores each token; softmax over all experts, the
  // experts_per_token most probable run, and their outputs are summed
  // weighted by those probabilities, renormalised to sum 1 when
  // norm_topk_prob. 0: a dense MLP of hidden_dim.
  int32_t num_experts = 0;
  int32_t experts_per_token = 0;
  int32_t expert_hidden_dim = 0;
  bool norm_topk_prob = true;

  int32_t q_dim() const { return num_heads * head_dim; }
  int32_t kv_dim() const { return num_kv_heads * head_dim; }
  // The window of `layer`'s attention, 0 for full attention.
  int32_t layer_window(int32_t layer) const {
    return layer_sliding.empty() || !layer_sliding[static_cast<size_t>(layer)] ? 0 : sliding_window;
  }
  // How many layers attend to a window.
  int32_t num_window_layers() const {
    int32_t n = 0;
    for (int32_t layer = 0; layer < num_layers; ++layer) n += layer_window(layer) > 0;
    return n;
  }
  float attention_scale() const;
  int32_t rope_dim() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  bool is_moe() const { return num_experts > 0; }
  // The width of the MLP a token runs: an expert's, or the dense MLP's.
  int32_t mlp_hidden_dim() const { return is_moe() ? expert_hidden_dim : hidden_dim; }
};

// Checks every field is positive and consistent (heads divide, head_dim even,
// ids within vocab). The message names the field; `source` names the file.
Status validate_config(const ModelConfig& config, const std::string& source);

// The recipe features beyond plain Llama that `config` uses, by name
// ("qkv_bias", "qk_norm", "sliding_window", ...), so that a backend or a
// writer can refuse what it does not implement.
std::vector<std::string> recipe_features(const ModelConfig& config);

// An error naming the first feature of recipe_features(config) that is not in
// `supported`, as "<who> does not implement <feature> (architecture X)".
Status require_features(const ModelConfig& config, const std::vector<std::string>& supported, const std::string& who);

}  // namespace zl
