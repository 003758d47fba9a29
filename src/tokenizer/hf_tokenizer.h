// Hugging Face tokenizer.json tokenizers (byte-level BPE as in GPT-2 / Llama-3 /
// Qwen2, and SentencePiece-style BPE with byte fallback as in Llama-2 /
// Mistral / Phi-3), and GGUF "gpt2" vocabularies built into the same BPE.
//
// Contract: encode/decode give exactly what the `tokenizers` library gives
// (Tokenizer.encode(text, add_special_tokens).ids and Tokenizer.decode(ids,
// skip_special_tokens), i.e. without transformers' clean_up_tokenization_spaces).
// Files are untrusted: every malformed input becomes a Status naming the file.
//
// HF details kept on purpose: encode(parse_special=false) leaves only
// *special* added tokens as plain text (tokenizers' encode_special_tokens);
// non-special added tokens (e.g. phi-2's whitespace runs) still split out.
// An added token with normalized=true decodes as its normalized content
// (Llama-2's "<s>" decodes as " <s>" after another token) and is not skipped by
// skip_special when normalizing changes it, exactly as tokenizers does.
// Invalid UTF-8 input is first repaired to U+FFFD (Rust from_utf8_lossy).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_data.h"
#include "zerolayer/status.h"

namespace zl {

// Loads a Hugging Face tokenizer.json. `config_dir` ("" for none) is the folder
// holding tokenizer_config.json / special_tokens_map.json, read for bos/eos
// tokens and add_bos_token/add_eos_token when the json's post_processor does
// not decide them.
StatusOr<std::unique_ptr<Tokenizer>> load_hf_tokenizer_json(const std::string& json_path,
                                                            const std::string& config_dir);

// GGUF tokenizer.ggml.model == "gpt2": byte-level BPE from tokens + merges;
// vocab.pre selects the split regex ("gpt2"/"default", "llama-bpe"/"llama3",
// "qwen2", "smollm", "falcon", ...; unknown -> gpt2 regex with a warning).
// Token types 3 (control) / 4 (user defined) become added tokens that are split
// out before BPE.
StatusOr<std::unique_ptr<Tokenizer>> make_bpe_tokenizer_from_vocab(const VocabData& vocab);

}  // namespace zl
