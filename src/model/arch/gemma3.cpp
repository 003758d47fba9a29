// Gemma 3 (Gemma3ForCausalLM, the text model; GGUF "gemma3"): embeddings
// scaled by sqrt(hidden), RMSNorm scaling by (1 + w) before and after both
// attention and the MLP, per-head q/k RMSNorm, a GELU-tanh gated MLP,
// attention scaled by query_pre_attn_scalar^-0.5, and five local
// sliding-window layers (rope base 10000, unscaled) to each global one
// (rope_theta, with rope_scaling). attn_logit_softcapping is read but, as in
// transformers' Gemma3Attention, not applied.
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(read_hf_gemma_common(f, /*default_pattern=*/6, c));
  c.qk_norm = true;
  ZL_ASSIGN_OR_RETURN(c.final_softcap, f.get_float("final_logit_softcapping", 0.0f));
  ZL_ASSIGN_OR_RETURN(float unused_attn_softcap, f.get_float("attn_logit_softcapping", 0.0f));
  (void)unused_attn_softcap;
  // transformers 4's files name the local layers' base here; transformers 5
  // puts it in rope_parameters.sliding_attention (read by hf_config.cpp).
  if (c.rope_theta_sliding == 0.0f) {
    ZL_ASSIGN_OR_RETURN(c.rope_theta_sliding, f.get_float("rope_local_base_freq", 10000.0f));
  }
  if (f.find("rope_theta") == nullptr && f.find("rope_parameters") == nullptr) c.rope_theta = 1000000.0f;
  return ok_status();
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  c.qk_norm = true;
  return read_gguf_gemma_common(f, "gemma3", {0, 6, 62, true}, c);
}

}  // namespace

extern const ArchDef kGemma3Arch = {"gemma3", "Gemma3ForCausalLM", "gemma3", read_hf, read_gguf, gemma_layer_tensors};

}  // namespace zl
