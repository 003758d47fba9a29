#include "tokenizer/spm_tokenizer.h"

namespace zl {

StatusOr<std::unique_ptr<Tokenizer>> load_spm_tokenizer(const std::string& model_path,
                                                        const std::string& config_dir) {
  return unimplemented(model_path, ": tokenizer.model loading is not implemented yet");
}

}  // namespace zl
