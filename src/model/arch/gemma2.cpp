// Gemma 2 (Gemma2ForCausalLM; GGUF "gemma2"): Gemma 3's block without the
// q/k norms, with soft-capped attention scores (attn_logit_softcapping, 50)
// and final logits (final_logit_softcapping, 30), and a sliding window on
// every other layer (the first included), one rope base for all layers.
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(read_hf_gemma_common(f, /*default_pattern=*/2, c));
  // transformers' defaults apply when the fields are absent; null turns them off.
  for (auto [key, cap, fallback] : {std::tuple{"attn_logit_softcapping", &c.attn_softcap, 50.0f},
                                    std::tuple{"final_logit_softcapping", &c.final_softcap, 30.0f}}) {
    if (!f.has_key(key)) {
      *cap = fallback;
      continue;
    }
    ZL_ASSIGN_OR_RETURN(*cap, f.get_float(key, 0.0f));
  }
  return ok_status();
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(read_gguf_gemma_common(f, "gemma2", {4096, 2, 46, false}, c));
  // llama.cpp's defaults when the keys are absent.
  if (!f.has("gemma2.attn_logit_softcapping")) c.attn_softcap = 50.0f;
  if (!f.has("gemma2.final_logit_softcapping")) c.final_softcap = 30.0f;
  return ok_status();
}

}  // namespace

extern const ArchDef kGemma2Arch = {"gemma2", "Gemma2ForCausalLM", "gemma2", read_hf, read_gguf, gemma_layer_tensors};

}  // namespace zl
