#include "bundle/gguf_vocab.h"

#include <limits>

#include "model/config_fields.h"

namespace zl {

StatusOr<VocabData> gguf_vocab(const GgufFile& g) {
  GgufFields r(g);
  VocabData v;
  ZL_ASSIGN_OR_RETURN(v.model, r.get_string("tokenizer.ggml.model"));
  if (v.model.empty()) return not_found(g.path, ": key tokenizer.ggml.model is missing (no tokenizer in this file)");
  ZL_ASSIGN_OR_RETURN(v.pre, r.get_string("tokenizer.ggml.pre"));
  const GgufValue* tokens = g.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->as_string_array() == nullptr)
    return r.type_error("tokenizer.ggml.tokens", "an array of strings");
  v.tokens = *tokens->as_string_array();
  if (const GgufValue* scores = g.find("tokenizer.ggml.scores")) {
    if (scores->as_float_array() == nullptr) return r.type_error("tokenizer.ggml.scores", "an array of floats");
    v.scores.assign(scores->as_float_array()->begin(), scores->as_float_array()->end());
  }
  if (const GgufValue* types = g.find("tokenizer.ggml.token_type")) {
    std::optional<std::vector<int64_t>> ints = types->as_int_array();
    if (!ints) return r.type_error("tokenizer.ggml.token_type", "an array of integers");
    for (int64_t t : *ints) {
      if (t < std::numeric_limits<int32_t>::min() || t > std::numeric_limits<int32_t>::max())
        return data_loss(g.path, ": key tokenizer.ggml.token_type has out-of-range value ", t);
      v.token_types.push_back(static_cast<int32_t>(t));
    }
  }
  if (const GgufValue* merges = g.find("tokenizer.ggml.merges")) {
    if (merges->as_string_array() == nullptr) return r.type_error("tokenizer.ggml.merges", "an array of strings");
    v.merges = *merges->as_string_array();
  }
  ZL_ASSIGN_OR_RETURN(v.bos_id, r.get_token_id("tokenizer.ggml.bos_token_id"));
  ZL_ASSIGN_OR_RETURN(v.eos_id, r.get_token_id("tokenizer.ggml.eos_token_id"));
  ZL_ASSIGN_OR_RETURN(v.unk_id, r.get_token_id("tokenizer.ggml.unknown_token_id"));
  ZL_ASSIGN_OR_RETURN(v.pad_id, r.get_token_id("tokenizer.ggml.padding_token_id"));
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    ZL_ASSIGN_OR_RETURN(int32_t id, r.get_token_id(key));
    if (id >= 0) v.eot_ids.push_back(id);
  }
  ZL_ASSIGN_OR_RETURN(v.add_bos, r.get_bool("tokenizer.ggml.add_bos_token"));
  ZL_ASSIGN_OR_RETURN(v.add_eos, r.get_bool("tokenizer.ggml.add_eos_token"));
  ZL_ASSIGN_OR_RETURN(v.add_space_prefix, r.get_bool("tokenizer.ggml.add_space_prefix"));
  ZL_ASSIGN_OR_RETURN(v.chat_template, r.get_string("tokenizer.chat_template"));
  return v;
}

}  // namespace zl
