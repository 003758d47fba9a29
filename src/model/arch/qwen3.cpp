// Qwen3 (Qwen3ForCausalLM; GGUF "qwen3"): Llama with an RMSNorm over each
// head of q and of k before rope (q_norm, k_norm: [head_dim]), biases on all
// four attention projections only when attention_bias is set, rotate-half
// rope, and Qwen2's optional sliding window.
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(require_hf_silu(f));
  ZL_ASSIGN_OR_RETURN(bool attention_bias, f.get_bool("attention_bias", false));
  c.qkv_bias = c.o_bias = attention_bias;
  c.qk_norm = true;
  return read_hf_qwen_sliding_window(f, c);
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  c.rope_interleaved = false;
  c.qk_norm = true;
  read_gguf_biases(f, c);
  return ok_status();
}

}  // namespace

extern const ArchDef kQwen3Arch = {"qwen3", "Qwen3ForCausalLM", "qwen3", read_hf, read_gguf, llama_layer_tensors};

}  // namespace zl
