// Validation of VocabData before a tokenizer is built from it. GGUF files are
// untrusted, so sizes, ids and token types are checked here once and the
// builders may then index freely.
#pragma once

#include "tokenizer/vocab_data.h"
#include "zerolayer/status.h"

namespace zl {

// ok, or invalid_argument naming the field: tokens empty or holding an empty
// string, scores/token_types (when non-empty) not of the tokens' size, a
// token type outside 0..6, bos/eos/unk/pad/eot ids outside [-1, vocab_size).
Status validate_vocab(const VocabData& vocab);

}  // namespace zl
