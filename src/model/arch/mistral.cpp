// Mistral (MistralForCausalLM): Llama without biases, with sliding-window
// attention in every layer when config.json's sliding_window is set (it is
// 4096 when absent, as in transformers; null turns it off). llama.cpp
// converts Mistral 7B to GGUF "llama" and drops the window.
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(require_hf_silu(f));
  // MistralAttention's projections have no bias whatever attention_bias says.
  ZL_ASSIGN_OR_RETURN(bool unused_bias, f.get_bool("attention_bias", false));
  (void)unused_bias;
  // transformers' MistralConfig: absent means its default of 4096, null means none.
  return read_hf_sliding_window_all_layers(f, 4096, c);
}

Status read_gguf(const GgufFields&, ModelConfig&) { return ok_status(); }

}  // namespace

extern const ArchDef kMistralArch = {"mistral", "MistralForCausalLM", nullptr, read_hf, read_gguf,
                                     llama_layer_tensors};

}  // namespace zl
