// A .safetensors file: the 8-byte header length, the JSON header, and every
// tensor's bytes inside the file.
#include "fuzz_input.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zl::fuzz::InputFile file(data, size);
  zl::StatusOr<zl::TensorIndex> index = zl::read_safetensors(file.path());
  if (index.ok()) zl::fuzz::touch_tensors(*index);
  return 0;
}
