// SentencePiece tokenizer.model files, through libsentencepiece (the reference
// implementation, so encode/decode match `sentencepiece` and HF's slow
// LlamaTokenizer with legacy=True by construction).
//
// bos/eos/unk/pad ids come from the model; tokenizer_config.json in
// `config_dir` may override add_bos_token / add_eos_token (default: add bos,
// not eos, as Llama/Mistral do) and name bos/eos/unk/pad tokens by content.
// parse_special: control pieces (<s>, </s>, [INST], ...) and user-defined
// pieces spelled in the text become their ids, like HF's LlamaTokenizer (which
// splits its special tokens out before calling sentencepiece); plain
// sentencepiece never does this for control pieces. Immutable after loading;
// libsentencepiece's Encode/Decode are const and thread-safe.
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"
#include "zerolayer/status.h"

namespace zl {

// `config_dir` is "" when there is no tokenizer_config.json to read.
StatusOr<std::unique_ptr<Tokenizer>> load_spm_tokenizer(const std::string& model_path,
                                                        const std::string& config_dir);

}  // namespace zl
