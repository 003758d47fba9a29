// A Hugging Face tokenizer.json, loaded and then used: encode and decode.
#include "fuzz_input.h"
#include "tokenizer/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zl::fuzz::InputFile file(data, size);
  zl::StatusOr<std::unique_ptr<zl::Tokenizer>> tokenizer = zl::load_hf_tokenizer_json(file.path(), "");
  if (!tokenizer.ok()) return 0;
  for (const char* text : {"Hello world", " héllo\t<|im_start|>user\n日本語 123456", ""}) {
    std::vector<int32_t> ids = (*tokenizer)->encode(text);
    (void)(*tokenizer)->decode(ids, false);
  }
  return 0;
}
