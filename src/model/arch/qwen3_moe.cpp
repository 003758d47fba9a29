// Qwen3-MoE (Qwen3MoeForCausalLM; GGUF "qwen3moe"): Qwen3's attention (q/k
// norms, rotate-half rope) with every MLP replaced by num_experts experts of
// moe_intermediate_size, of which each token runs the num_experts_per_tok its
// router scores highest, renormalised when norm_topk_prob (llama.cpp always
// renormalises; the released models set it). No shared expert.
#include "model/arch.h"

namespace zl {
namespace {

// Qwen3's own fields (arch/qwen3.cpp), then the experts'.
const ArchDef& qwen3() { return *find_arch("qwen3"); }

Status read_hf(const HfFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(qwen3().read_hf(f, c));
  // Hub files say num_experts; transformers 5 writes num_local_experts.
  const char* count_key = f.find("num_experts") != nullptr ? "num_experts" : "num_local_experts";
  ZL_ASSIGN_OR_RETURN(c.num_experts, f.get_i32(count_key));
  if (c.num_experts <= 0) return f.refuse(count_key, "a Qwen3-MoE model needs experts");
  ZL_ASSIGN_OR_RETURN(c.experts_per_token, f.get_i32("num_experts_per_tok"));
  ZL_ASSIGN_OR_RETURN(c.expert_hidden_dim, f.get_i32("moe_intermediate_size"));
  ZL_ASSIGN_OR_RETURN(c.norm_topk_prob, f.get_bool("norm_topk_prob", false));
  // Dense layers among the sparse ones (every layer is sparse in the released models).
  ZL_ASSIGN_OR_RETURN(int32_t sparse_step, f.get_i32("decoder_sparse_step", 1));
  if (sparse_step != 1) return f.refuse("decoder_sparse_step", "only 1 (every layer has experts) is implemented");
  ZL_ASSIGN_OR_RETURN(std::vector<float> dense_layers, f.get_float_list("mlp_only_layers"));
  if (!dense_layers.empty()) return f.refuse("mlp_only_layers", "dense layers among expert layers are not implemented");
  ZL_ASSIGN_OR_RETURN(float unused_jitter, f.get_float("router_jitter_noise", 0.0f));  // training only
  (void)unused_jitter;
  return ok_status();
}

Status read_gguf(const GgufFields& f, ModelConfig& c) {
  ZL_RETURN_IF_ERROR(qwen3().read_gguf(f, c));
  return read_gguf_experts(f, c.source_arch, c);
}

std::vector<LayerTensor> layer_tensors(const ModelConfig& c) {
  return moe_layer_tensors(c, {"mlp.gate.weight", "mlp.experts", "gate_proj", "up_proj", "down_proj"});
}

}  // namespace

extern const ArchDef kQwen3MoeArch = {"qwen3_moe", "Qwen3MoeForCausalLM", "qwen3moe", read_hf, read_gguf,
                                      layer_tensors};

}  // namespace zl
