// Mixtral (MixtralForCausalLM): Mistral's attention with every MLP replaced
// by num_local_experts experts, of which each token runs the
// num_experts_per_tok its router scores highest, weights renormalised to sum
// 1. llama.cpp converts it to GGUF "llama" with {arch}.expert_count set;
// arch/llama.cpp hands such files to this recipe.
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(require_hf_silu(f));
  ZL_ASSIGN_OR_RETURN(c.num_experts, f.get_i32("num_local_experts"));
  ZL_ASSIGN_OR_RETURN(c.experts_per_token, f.get_i32("num_experts_per_tok"));
  c.expert_hidden_dim = c.hidden_dim;
  c.norm_topk_prob = true;
  // Noise on the router's input while training only.
  ZL_ASSIGN_OR_RETURN(float unused_jitter, f.get_float("router_jitter_noise", 0.0f));
  (void)unused_jitter;
  // transformers' MixtralConfig: no window unless sliding_window is set.
  return read_hf_sliding_window_all_layers(f, 0, c);
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  c.rope_interleaved = true;  // the "llama" converter's q/k order
  return read_gguf_experts(f, c.source_arch, c);
}

std::vector<LayerTensor> layer_tensors(const ModelConfig& c) {
  return moe_layer_tensors(c, {"block_sparse_moe.gate.weight", "block_sparse_moe.experts", "w1", "w3", "w2"});
}

}  // namespace

// No gguf_name: GGUF "llama" files with experts reach read_gguf through arch/llama.cpp.
extern const ArchDef kMixtralArch = {"mixtral", "MixtralForCausalLM", nullptr, read_hf, read_gguf, layer_tensors};

}  // namespace zl
