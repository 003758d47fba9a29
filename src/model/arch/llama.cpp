// Llama 2 / 3 (LlamaForCausalLM; GGUF "llama", which llama.cpp also uses for
// Mistral 7B, and for Mixtral: a file with {arch}.expert_count > 0 is read
// by arch/mixtral.cpp): pre-norm RMSNorm, SwiGLU, rope. attention_bias puts
// biases on all four attention projections (q, k, v and o).
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(require_hf_silu(f));
  ZL_ASSIGN_OR_RETURN(bool attention_bias, f.get_bool("attention_bias", false));
  c.qkv_bias = c.o_bias = attention_bias;
  ZL_ASSIGN_OR_RETURN(bool mlp_bias, f.get_bool("mlp_bias", false));
  if (mlp_bias) return f.refuse("mlp_bias", "biases on the MLP are not implemented");
  return ok_status();
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  ZL_ASSIGN_OR_RETURN(int32_t experts, f.get_i32(c.source_arch + ".expert_count", 0));
  if (experts > 0) {
    c.arch = "mixtral";
    return find_arch("mixtral")->read_gguf(f, c);
  }
  c.rope_interleaved = true;  // llama.cpp's converter permutes q/k into pair order
  read_gguf_biases(f, c);
  return ok_status();
}

}  // namespace

extern const ArchDef kLlamaArch = {"llama", "LlamaForCausalLM", "llama", read_hf, read_gguf, llama_layer_tensors};

}  // namespace zl
