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
//
// Fast path (ContinuationPieces): the same argument says that when nothing is
// held back and some text was returned, appending a token t that could start
// a window adds exactly decode({t, t}) minus decode({t}) (t's text when not
// first), and t may then start the window alone. So such a push is a table lookup, not a decode.
#include <algorithm>
#include <limits>

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

ContinuationPieces::ContinuationPieces(const Tokenizer& tokenizer)
    : entries_(static_cast<size_t>(std::max(tokenizer.vocab_size(), 0))) {
  constexpr size_t kMaxLen = std::numeric_limits<uint16_t>::max();
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (!is_window_start(tokenizer, id)) continue;
    int32_t one[1] = {id};
    int32_t two[2] = {id, id};
    std::string alone = tokenizer.decode(one, /*skip_special=*/false);
    std::string twice = tokenizer.decode(two, /*skip_special=*/false);
    if (!twice.starts_with(alone) || twice.size() == alone.size()) continue;
    std::string_view piece = std::string_view(twice).substr(alone.size());
    if (stable_len(std::string(piece)) != piece.size() || piece.size() > kMaxLen || alone.size() > kMaxLen ||
        bytes_.size() + piece.size() > std::numeric_limits<uint32_t>::max()) {
      continue;
    }
    Entry& e = entries_[static_cast<size_t>(id)];
    e.offset = static_cast<uint32_t>(bytes_.size());
    e.piece_len = static_cast<uint16_t>(piece.size());
    e.alone_len = static_cast<uint16_t>(alone.size());
    bytes_.append(piece);
  }
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special, const ContinuationPieces* pieces)
    : tokenizer_(tokenizer), skip_special_(skip_special), pieces_(pieces) {}

std::string StreamDecoder::push(int32_t id) {
  std::string_view fast_piece;
  size_t alone_len = 0;
  // Some text must precede: leading-space stripping applies to the first
  // text, which may follow skipped special tokens.
  if (pieces_ != nullptr && emitted_bytes_ > 0 && !holding_ && pieces_->find(id, &fast_piece, &alone_len)) {
    ids_.assign(1, id);
    emitted_bytes_ = alone_len;
    return std::string(fast_piece);
  }
  ids_.push_back(id);
  std::string text = tokenizer_.decode(ids_, skip_special_);
  size_t stable = stable_len(text);
  std::string piece;
  if (stable > emitted_bytes_) {
    piece = text.substr(emitted_bytes_, stable - emitted_bytes_);
    emitted_bytes_ = stable;
  }
  holding_ = emitted_bytes_ != text.size();
  if (ids_.size() < kMaxWindowIds || holding_) return piece;
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
  holding_ = false;
  return rest;
}

}  // namespace zl
