// A GGUF file: header, metadata, tensor index (every offset inside the file),
// then the model config, the vocabulary and a tokenizer built from it, as
// `zerolayer serve --model FILE.gguf` reads them before loading weights.
#include "bundle/gguf_vocab.h"
#include "fuzz_input.h"
#include "model/gguf.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zl::fuzz::InputFile file(data, size);
  zl::StatusOr<zl::GgufFile> gguf = zl::read_gguf(file.path());
  if (!gguf.ok()) return 0;
  zl::fuzz::touch_tensors(gguf->tensors);
  (void)zl::gguf_model_config(*gguf);
  zl::StatusOr<zl::VocabData> vocab = zl::gguf_vocab(*gguf);
  if (!vocab.ok()) return 0;
  zl::StatusOr<std::unique_ptr<zl::Tokenizer>> tokenizer = zl::make_tokenizer_from_vocab(*vocab);
  if (!tokenizer.ok()) return 0;
  std::vector<int32_t> ids = (*tokenizer)->encode("Hello world, héllo <s> 123\n");
  (void)(*tokenizer)->decode(ids, false);
  return 0;
}
