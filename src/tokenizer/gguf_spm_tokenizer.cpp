#include "tokenizer/gguf_spm_tokenizer.h"

namespace zl {

StatusOr<std::unique_ptr<Tokenizer>> make_spm_tokenizer_from_vocab(const VocabData& vocab) {
  return unimplemented("GGUF llama vocabularies are not implemented yet");
}

}  // namespace zl
