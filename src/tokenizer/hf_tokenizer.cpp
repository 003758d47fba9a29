// Stub: the implementation follows in later commits.
#include "tokenizer/hf_tokenizer.h"

namespace zl {

StatusOr<std::unique_ptr<Tokenizer>> load_hf_tokenizer_json(const std::string& json_path,
                                                            const std::string& config_dir) {
  return unimplemented(json_path, ": tokenizer.json loading is not implemented yet");
}

StatusOr<std::unique_ptr<Tokenizer>> make_bpe_tokenizer_from_vocab(const VocabData& vocab) {
  return unimplemented("GGUF gpt2 vocabularies are not implemented yet");
}

}  // namespace zl
