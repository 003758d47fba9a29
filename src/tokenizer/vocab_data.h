// A tokenizer's vocabulary as plain data, independent of the file it came
// from. The GGUF reader (model/gguf) fills it from `tokenizer.ggml.*` metadata;
// tokenizer/ builds a Tokenizer from it (make_tokenizer_from_vocab). Nothing
// here is validated yet: the builder checks sizes, ids and types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zl {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct VocabData {
  std::string model;  // tokenizer.ggml.model: "llama" (SentencePiece-style) or "gpt2" (byte-level BPE)
  std::string pre;    // tokenizer.ggml.pre: pre-tokenizer name ("default", "llama-bpe", "qwen2", ...)
  std::vector<std::string> tokens;       // [vocab_size], the token strings as stored
  std::vector<float> scores;             // [vocab_size] or empty
  std::vector<int32_t> token_types;      // [vocab_size] (TokenType values) or empty
  std::vector<std::string> merges;       // "a b" pairs, gpt2 only, in rank order
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  std::vector<int32_t> eot_ids;          // extra end-of-turn / eos ids, if known
  std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;           // tokenizer.ggml.add_eos_token
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix
  std::string chat_template;             // tokenizer.chat_template, if present
};

}  // namespace zl
