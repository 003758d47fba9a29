// Reads a Hugging Face model directory's config.json (and generation_config.json
// beside it, if present) into a ModelConfig: the shape, rope and special ids
// every family shares, then the family's own fields through its architecture
// file (model/arch.h), picked by "architectures"[0]; an unknown class is
// unimplemented, listing the supported ones. A field that changes the
// computation and that the family does not read is refused by name. Every
// field is type-checked, and errors name the file and the field. The result
// has passed validate_config.
#pragma once

#include <string>

#include "model/config.h"
#include "zerolayer/status.h"

namespace zl {

// `dir` holds config.json. rope_interleaved is always false: transformers
// rotates (i, i + head_dim/2) pairs (rotate_half). eos_token_ids is the union
// of config.json's and generation_config.json's eos_token_id (int or list), in
// that order; generation_config.json's bos_token_id, when set, wins.
StatusOr<ModelConfig> read_hf_config(const std::string& dir);

}  // namespace zl
