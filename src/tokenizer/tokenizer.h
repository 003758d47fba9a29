// The tokenizer interface every format implements: tokenizer.json (byte-level
// BPE and SentencePiece-style BPE), tokenizer.model (libsentencepiece), GGUF
// vocabularies and the built-in byte tokenizer of dummy: models.
//
// Contract: encode() followed by decode() reproduces what Hugging Face
// `tokenizers` / `sentencepiece` give for the same files (tests compare with
// goldens made by scripts/golden/make_tokenizer_goldens.py). Tokenizers are
// immutable after construction and safe to use from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab_data.h"
#include "zerolayer/status.h"

namespace zl {

struct SpecialTokenIds {
  int32_t bos = -1;               // -1: none
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t pad = -1;
  bool add_bos = false;           // encode(add_special=true) prepends bos
  bool add_eos = false;           // ... and appends eos
};

// A text prompt may take at most this many bytes per token of context (or
// the vocabulary's longest token, if longer): longer text cannot fit, so
// servers refuse it by its size, before spending time on tokenizing it.
inline constexpr int64_t kMaxPromptBytesPerToken = 32;

// How token_text spells a token's bytes. Grammar masks need every token's
// exact bytes, which decode() cannot give (it replaces partial UTF-8 with
// U+FFFD, and SentencePiece strips a leading space):
//   kRaw           the bytes themselves;
//   kByteLevel     GPT-2's byte-to-character map (Ġ for a space);
//   kByteFallback  SentencePiece's ▁ for a space and <0xAB> for a byte.
enum class TokenSpelling { kRaw, kByteLevel, kByteFallback };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text to ids. add_special: add bos/eos as the tokenizer's config says (HF
  // add_special_tokens=True). parse_special: added/special tokens spelled in
  // the text become their ids (HF behaviour); when false they are plain text.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special = true,
                                      bool parse_special = true) const = 0;

  // Ids to text, as HF decode(ids, skip_special_tokens=skip_special).
  // Ids out of range are skipped.
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special = true) const = 0;

  // Number of ids, including added tokens (max id + 1).
  virtual int32_t vocab_size() const = 0;
  // The token's string as stored in the vocabulary (e.g. "▁the", "Ġthe", "<s>").
  virtual std::string token_text(int32_t id) const = 0;
  // True for control/special tokens (bos, eos, <|im_end|>, ...).
  virtual bool is_special(int32_t id) const = 0;
  virtual TokenSpelling token_spelling() const = 0;
  virtual const SpecialTokenIds& special_ids() const = 0;
  // A short name for `check` and logs, e.g. "tokenizer.json byte-level BPE".
  virtual std::string describe() const = 0;
};

// Loads from a tokenizer.json or tokenizer.model file, or from a directory that
// holds one of them (tokenizer.json preferred) with tokenizer_config.json /
// special_tokens_map.json beside it for bos/eos and add_bos.
StatusOr<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

// The most text bytes one token decodes to (one decode per id).
int64_t longest_token_bytes(const Tokenizer& tokenizer);

// Builds a tokenizer from GGUF vocabulary data (model "llama" or "gpt2").
StatusOr<std::unique_ptr<Tokenizer>> make_tokenizer_from_vocab(const VocabData& vocab);

// The built-in tokenizer of dummy: models: ids 0..255 are the bytes 0x00..0xFF
// (so any text encodes), 256 is <s> (bos), 257 is </s> (eos), and every id
// from 258 to vocab_size-1 is a single token "<t{id}>" that decodes to that text.
// vocab_size must be at least 258.
std::unique_ptr<Tokenizer> make_byte_tokenizer(int32_t vocab_size);

// Incremental decoding for streaming: feed ids one at a time, get text pieces
// that never split a UTF-8 character; the concatenation of all pieces equals
// decode(all ids). Incomplete bytes are held back until completed (or flushed).
//
// The text most ids add does not depend on their neighbours: ContinuationPieces
// holds it per id, built once per tokenizer (two decodes per id), so that a
// decoder given one appends such an id in O(1) instead of decoding its window.
class ContinuationPieces {
 public:
  explicit ContinuationPieces(const Tokenizer& tokenizer);
  // The text `id` adds after a token whose text is complete, and the length
  // of decode({id}) alone; false when `id` needs the full window (special,
  // out of range, empty, or not a whole character by itself).
  bool find(int32_t id, std::string_view* piece, size_t* alone_len) const {
    if (id < 0 || static_cast<size_t>(id) >= entries_.size() || entries_[id].piece_len == 0) return false;
    const Entry& e = entries_[static_cast<size_t>(id)];
    *piece = std::string_view(bytes_).substr(e.offset, e.piece_len);
    *alone_len = e.alone_len;
    return true;
  }

 private:
  struct Entry {
    uint32_t offset = 0;
    uint16_t piece_len = 0;  // 0: no fast path for this id
    uint16_t alone_len = 0;
  };
  std::vector<Entry> entries_;  // [vocab_size]
  std::string bytes_;           // every piece, back to back
};

class StreamDecoder {
 public:
  // `pieces`, when given, must be built from the same tokenizer and outlive
  // the decoder; it changes only the speed, never the text.
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = true,
                         const ContinuationPieces* pieces = nullptr);
  // Returns the new text (possibly empty) after appending `id`.
  std::string push(int32_t id);
  // Returns what is held back (invalid UTF-8 remainders become U+FFFD as HF does).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  const ContinuationPieces* pieces_;
  std::vector<int32_t> ids_;
  size_t emitted_bytes_ = 0;  // bytes of decode(ids_) already returned
  bool holding_ = false;      // emitted_bytes_ < decode(ids_).size()
};

}  // namespace zl
