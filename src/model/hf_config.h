// Reads a Hugging Face model directory's config.json (and generation_config.json
// beside it, if present) into a ModelConfig. Supported architectures:
// LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM; anything else is
// unimplemented. Every field is type-checked, and errors name the file and the
// field. The result has passed validate_config.
#pragma once

#include <string>

#include "core/status.h"
#include "model/config.h"

namespace zl {

// `dir` holds config.json. rope_interleaved is always false: transformers
// rotates (i, i + head_dim/2) pairs (rotate_half). eos_token_ids is the union
// of config.json's and generation_config.json's eos_token_id (int or list), in
// that order; generation_config.json's bos_token_id, when set, wins.
StatusOr<ModelConfig> read_hf_config(const std::string& dir);

}  // namespace zl
