// Qwen2 / Qwen2.5 (Qwen2ForCausalLM; GGUF "qwen2"): Llama with biases on the
// q, k and v projections (never on o), rotate-half rope in both formats, and
// sliding-window attention on the layers from max_window_layers on when
// use_sliding_window is set.
#include "model/arch.h"

namespace zl {
namespace {

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(require_hf_silu(f));
  c.qkv_bias = true;
  return read_hf_qwen_sliding_window(f, c);
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  c.rope_interleaved = false;  // llama.cpp runs qwen2 with NEOX-style rope
  read_gguf_biases(f, c);
  return ok_status();
}

}  // namespace

extern const ArchDef kQwen2Arch = {"qwen2", "Qwen2ForCausalLM", "qwen2", read_hf, read_gguf, llama_layer_tensors};

}  // namespace zl
