// The architecture seam. Each model family lives in one file,
// src/model/arch/<name>.cpp, which defines one ArchDef: how its
// hyper-parameters and layer recipe are read from config.json and from GGUF
// metadata, and the names and shapes of its per-layer tensors in both
// formats. The shared pieces (the shape fields every family has, the
// loading, the forward pass and its kernels) read the family only through
// the ModelConfig recipe and the tensor list the definition gives.
//
// Adding a family: write arch/<name>.cpp with its ArchDef and add it to the
// list in arch.cpp. A recipe step the forward pass lacks (a new norm, a new
// activation) is a kernel plus a ModelConfig field, named in
// recipe_features() so that backends without it refuse the model.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/config_fields.h"
#include "model/weights.h"
#include "zerolayer/status.h"

namespace zl {

struct ArchDef {
  const char* name;       // ours, in ModelConfig::arch: "llama"
  const char* hf_class;   // config.json "architectures"[0]: "LlamaForCausalLM"; nullptr if none
  const char* gguf_name;  // general.architecture: "llama"; nullptr if none
  // Read the family's own fields after the shared shape, rope and special
  // ids (read by hf_config.cpp / gguf_meta.cpp) are in `config`. Every field
  // that changes the computation is read: implemented, or refused by name.
  Status (*read_hf)(const HfFields& fields, ModelConfig& config);
  Status (*read_gguf)(const GgufFields& fields, ModelConfig& config);
  // Per-layer tensors in load order (the embedding, the final norm and the
  // classifier are the same for every family; weights.cpp adds them).
  std::vector<LayerTensor> (*layer_tensors)(const ModelConfig& config);
};

// nullptr when unknown. find_arch takes our name (ModelConfig::arch).
const ArchDef* find_arch(std::string_view name);
const ArchDef* find_arch_by_hf_class(std::string_view hf_class);
const ArchDef* find_arch_by_gguf_name(std::string_view gguf_name);
// "LlamaForCausalLM, MistralForCausalLM, ..." / "llama, qwen2, ..." for errors.
std::string supported_hf_classes();
std::string supported_gguf_names();

// Shared pieces the architecture files build from.

// The Llama block: attn_norm, q/k/v (with biases when config.qkv_bias), o
// (with a bias when config.o_bias), ffn_norm, gate, up, down; q_norm and
// k_norm ([head_dim]) when config.qk_norm.
std::vector<LayerTensor> llama_layer_tensors(const ModelConfig& config);
// A mixture-of-experts family's tensor names in Hugging Face files, after
// "model.layers.N.": the router, and "<experts>.<e>.<gate|up|down>.weight".
struct HfMoeNames {
  const char* router;   // "mlp.gate.weight"
  const char* experts;  // "mlp.experts"
  const char* gate;     // "gate_proj"
  const char* up;       // "up_proj"
  const char* down;     // "down_proj"
};
// The Llama block with its MLP replaced by experts: llama_layer_tensors'
// norms and attention, the router (GGUF: ffn_gate_inp) and each expert's
// gate, up and down (GGUF: stacked in ffn_gate_exps, ffn_up_exps,
// ffn_down_exps).
std::vector<LayerTensor> moe_layer_tensors(const ModelConfig& config, const HfMoeNames& names);
// {arch}.expert_count, {arch}.expert_used_count and the experts' width,
// {arch}.expert_feed_forward_length (default: feed_forward_length). llama.cpp
// renormalises the top-k weights of both families read this way (Mixtral in
// "llama", "qwen3moe"); so does this.
Status read_gguf_experts(const GgufFields& fields, const std::string& arch, ModelConfig& config);
// The Gemma 2 / 3 block: Llama's tensors under Gemma's names, plus the norms
// after attention and after the MLP (post_norms) and, with qk_norm, q/k norms.
std::vector<LayerTensor> gemma_layer_tensors(const ModelConfig& config);
// Gemma 2 / 3's shared fields: the GELU-tanh MLP, norms scaling by (1 + w),
// embeddings scaled by sqrt(hidden), query_pre_attn_scalar, attention_bias,
// tied embeddings by default, and the sliding window with layer_types (or,
// in files without them, every `default_pattern`-th layer full).
Status read_hf_gemma_common(const HfFields& fields, int32_t default_pattern, ModelConfig& config);
// How llama.cpp reads one Gemma generation's GGUF keys.
struct GemmaGgufRules {
  int32_t default_window;   // when {arch}.attention.sliding_window is absent (0: no window)
  int32_t default_pattern;  // every n-th layer is full, when the file does not say
  int32_t layers_27b;       // the 27B's layer count: it scales by 1/sqrt(hidden / heads)
  bool local_rope;          // windowed layers rotate with {arch}.rope.freq_base_swa (default 10000)
};
// Gemma's GGUF keys: {arch}.attention.sliding_window,
// {arch}.attention.sliding_window_pattern (a bool per layer, or n: every n-th
// layer full), {arch}.rope.freq_base_swa, {arch}.attn_logit_softcapping and
// {arch}.final_logit_softcapping, plus the recipe (GELU-tanh, post norms,
// embeddings scaled by sqrt(hidden), llama.cpp's attention scale). The norm
// weights already hold Gemma's + 1.
Status read_gguf_gemma_common(const GgufFields& fields, const std::string& arch, const GemmaGgufRules& rules,
                              ModelConfig& config);
// A GGUF file names its optional biases by their presence: sets qkv_bias and
// o_bias from blk.0's tensors.
void read_gguf_biases(const GgufFields& fields, ModelConfig& config);
// A sliding_window (an int, or null: none) applied to every layer;
// `default_window` when the field is absent (Mistral: 4096, Phi-3: none).
Status read_hf_sliding_window_all_layers(const HfFields& fields, int32_t default_window, ModelConfig& config);
// Qwen2 / Qwen3: sliding_window (4096 when absent, null: none) only when
// use_sliding_window is true; which layers slide from layer_types when the
// file lists them, else the layers from max_window_layers (28) on.
Status read_hf_qwen_sliding_window(const HfFields& fields, ModelConfig& config);
// layer_types ("full_attention" / "sliding_attention", one per layer) into
// config.layer_sliding, when the file lists them; `window` 0 makes every
// layer full (as transformers does when sliding_window is null). Returns
// whether the field was present.
StatusOr<bool> read_hf_layer_types(const HfFields& fields, int32_t window, ModelConfig& config);
// hidden_act must be silu (the only activation Llama-style MLPs use).
Status require_hf_silu(const HfFields& fields);

}  // namespace zl
