// GGUF vocabularies with tokenizer.ggml.model == "llama": SentencePiece-style
// BPE driven by token scores, as llama.cpp's llm_tokenizer_spm implements it.
// Encode: split out control (type 3) and user-defined (type 4) tokens when
// parse_special; prepend "▁" to the text when add_space_prefix (default true);
// replace spaces by "▁"; merge adjacent symbols, highest-scoring known pair
// first; pieces not in the vocabulary fall back to <0xNN> byte tokens (type 6)
// or unk. Decode mirrors llama.cpp/HF: "▁" -> " ", byte tokens joined into
// UTF-8, one leading space of the sequence stripped when add_space_prefix.
#pragma once

#include <memory>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_data.h"
#include "zerolayer/status.h"

namespace zl {

// Checks `vocab` with validate_vocab() first; its model should be "llama".
StatusOr<std::unique_ptr<Tokenizer>> make_spm_tokenizer_from_vocab(const VocabData& vocab);

}  // namespace zl
