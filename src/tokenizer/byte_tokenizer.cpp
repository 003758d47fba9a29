// The built-in tokenizer of dummy: models (contract in tokenizer.h): ids
// 0..255 are raw bytes, 256 <s>, 257 </s>, 258.. "<t{id}>". It needs no files,
// so tests and benchmarks of synthetic models can still encode any text.
//
// Choices the header leaves open, made to look like a Llama-style tokenizer:
// add_special prepends <s> (add_bos true, add_eos false); parse_special turns
// "<s>" and "</s>" spelled in the text into 256/257 (the "<t{id}>" tokens are
// ordinary tokens and are never parsed from text); token_text of a byte id is
// "<0xNN>" as in SentencePiece vocabularies; decode() replaces invalid UTF-8
// with U+FFFD like HF's ByteLevel decoder.
#include <cstdio>

#include "core/check.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_text.h"

namespace zl {
namespace {

constexpr int32_t kBosId = 256;
constexpr int32_t kEosId = 257;
constexpr int32_t kFirstExtraId = 258;
constexpr std::string_view kBosText = "<s>";
constexpr std::string_view kEosText = "</s>";

class ByteTokenizer final : public Tokenizer {
 public:
  explicit ByteTokenizer(int32_t vocab_size) : vocab_size_(vocab_size) {
    special_.bos = kBosId;
    special_.eos = kEosId;
    special_.add_bos = true;
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override {
    std::vector<int32_t> ids;
    ids.reserve(text.size() + 2);
    if (add_special && special_.add_bos) ids.push_back(kBosId);
    size_t pos = 0;
    while (pos < text.size()) {
      std::string_view rest = text.substr(pos);
      if (parse_special && rest.starts_with(kBosText)) {
        ids.push_back(kBosId);
        pos += kBosText.size();
      } else if (parse_special && rest.starts_with(kEosText)) {
        ids.push_back(kEosId);
        pos += kEosText.size();
      } else {
        ids.push_back(static_cast<uint8_t>(text[pos]));
        ++pos;
      }
    }
    if (add_special && special_.add_eos) ids.push_back(kEosId);
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string bytes;
    bytes.reserve(ids.size());
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size_) continue;
      if (id < 256) {
        bytes.push_back(static_cast<char>(id));
      } else if (id >= kFirstExtraId || !skip_special) {
        bytes += token_text(id);
      }
    }
    return utf8_sanitize(bytes);
  }

  int32_t vocab_size() const override { return vocab_size_; }

  std::string token_text(int32_t id) const override {
    if (id < 0 || id >= vocab_size_) return "";
    if (id < 256) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", id);
      return buf;
    }
    if (id == kBosId) return std::string(kBosText);
    if (id == kEosId) return std::string(kEosText);
    return "<t" + std::to_string(id) + ">";
  }

  bool is_special(int32_t id) const override { return id == kBosId || id == kEosId; }
  TokenSpelling token_spelling() const override { return TokenSpelling::kByteFallback; }
  const SpecialTokenIds& special_ids() const override { return special_; }
  std::string describe() const override {
    return str_cat("built-in byte tokenizer (vocab ", vocab_size_, ")");
  }

 private:
  int32_t vocab_size_;
  SpecialTokenIds special_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer(int32_t vocab_size) {
  CHECK(vocab_size >= kFirstExtraId) << "byte tokenizer needs vocab_size >= 258, got " << vocab_size;
  return std::make_unique<ByteTokenizer>(vocab_size);
}

}  // namespace zl
