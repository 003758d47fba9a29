// StreamDecoder (contract in tokenizer.h).
//
// Algorithm (the prefix_offset/read_offset trick of TGI and vLLM, kept inside
// the header's two members): ids_ is a window, the suffix of all ids pushed so
// far, and emitted_bytes_ counts the bytes of decode(ids_) already returned.
// Each push decodes the window and returns the text past emitted_bytes_, up to
// the last complete character: a trailing truncated UTF-8 sequence or U+FFFD
// (an incomplete byte-fallback char) is held back, because the next id may
// complete it. So a push costs O(window), not O(all ids).
//
// Why the window is sound: every decoder here is local (a token's text depends
// on the token only) except for (a) joining byte tokens into characters and
// (b) SentencePiece's "strip one leading space of the first token". When
// nothing is held back we move the window start to a token t that is not
// special and whose own decode is non-empty and free of U+FFFD: then t starts
// a character, (a) cannot reach back across it, and (b) only touches t, whose
// text was already returned (decode(window) and decode(window + new) strip it
// alike). Known limit, shared with TGI/vLLM: HF's ByteFallback decoder turns a
// whole run of byte tokens into U+FFFDs when the run ends invalid, which can
// change text already returned; only invalid model output triggers it.
#include <algorithm>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_text.h"

namespace zl {
namespace {

// Start trimming once the window is this long, keeping about kKeepIds ids.
constexpr size_t kMaxWindowIds = 10;
constexpr size_t kKeepIds = 4;

// Bytes of `text` safe to return now: not a truncated sequence or U+FFFDs at
// the end, which the next id may still turn into a character.
size_t stable_len(const std::string& text) {
  size_t n = utf8_complete_prefix_len(text);
  while (n >= kUtf8Replacement.size() &&
         std::string_view(text).substr(0, n).ends_with(kUtf8Replacement)) {
    n -= kUtf8Replacement.size();
  }
  return n;
}

bool is_window_start(const Tokenizer& tokenizer, int32_t id) {
  if (id < 0 || id >= tokenizer.vocab_size() || tokenizer.is_special(id)) return false;
  int32_t one[1] = {id};
  std::string text = tokenizer.decode(one, /*skip_special=*/false);
  return !text.empty() && text.find(kUtf8Replacement) == std::string::npos;
}

}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  std::string text = tokenizer_.decode(ids_, skip_special_);
  size_t stable = stable_len(text);
  std::string piece;
  if (stable > emitted_bytes_) {
    piece = text.substr(emitted_bytes_, stable - emitted_bytes_);
    emitted_bytes_ = stable;
  }
  if (ids_.size() < kMaxWindowIds || emitted_bytes_ != text.size()) return piece;
  // Everything is returned: move the window start to a safe token (see top).
  for (size_t start = ids_.size() - kKeepIds; start < ids_.size(); ++start) {
    if (!is_window_start(tokenizer_, ids_[start])) continue;
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(start));
    emitted_bytes_ = tokenizer_.decode(ids_, skip_special_).size();
    break;
  }
  return piece;
}

std::string StreamDecoder::flush() {
  std::string text = tokenizer_.decode(ids_, skip_special_);
  std::string rest;
  if (text.size() > emitted_bytes_) rest = utf8_sanitize(text.substr(emitted_bytes_));
  emitted_bytes_ = text.size();
  return rest;
}

}  // namespace zl
