// A GGUF file's tokenizer: the model reader (model/gguf.h) parses the
// metadata, this turns the tokenizer.ggml.* keys into the tokenizer's plain
// vocabulary data (tokenizer/vocab_data.h), so neither layer knows the other.
#pragma once

#include "model/gguf.h"
#include "tokenizer/vocab_data.h"
#include "zerolayer/status.h"

namespace zl {

// The tokenizer vocabulary from tokenizer.ggml.* and tokenizer.chat_template.
// Types are checked here; sizes and ids are left to the tokenizer builder.
// Ids stored as 0xFFFFFFFF (llama.cpp's "none") become -1.
StatusOr<VocabData> gguf_vocab(const GgufFile& gguf);

}  // namespace zl
