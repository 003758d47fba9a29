// GGUF "llama" vocabularies: llama.cpp's llm_tokenizer_spm (contract in the
// header). Where llama.cpp and sentencepiece differ, sentencepiece wins,
// because the goldens come from HF/sentencepiece:
//  - merges only form normal, user-defined or unused tokens (llama.cpp would
//    also merge into a control or byte token whose text is spelled out, e.g.
//    "<0x0A>"); unused tokens are split back into their halves;
//  - special tokens in the text are matched leftmost-longest (llama.cpp tries
//    the longest special token first over the whole text).
// As in llama.cpp, every text fragment that follows a special token gets the
// space prefix, user-defined tokens are split out even without parse_special,
// and control/unknown tokens only with it.
#include "tokenizer/gguf_spm_tokenizer.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "tokenizer/utf8_text.h"
#include "tokenizer/vocab_check.h"

namespace zl {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // "▁"

// llama.cpp's unicode_len_utf8: a byte's sequence length from its high bits
// (continuation and invalid bytes count as 1).
size_t utf8_len_from_lead(uint8_t b) {
  static constexpr uint8_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLookup[b >> 4];
}

struct Symbol {
  size_t offset;  // into the escaped text
  size_t size;    // 0 once merged into its left neighbour
  int prev;
  int next;
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;
};

// Highest score first; on ties the leftmost pair (llama.cpp's comparator).
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

class GgufSpmTokenizer final : public Tokenizer {
 public:
  explicit GgufSpmTokenizer(const VocabData& vocab) : tokens_(vocab.tokens) {
    const size_t n = tokens_.size();
    scores_ = vocab.scores.empty() ? std::vector<float>(n, 0.0f) : vocab.scores;
    types_.resize(n, TokenType::kNormal);
    for (size_t i = 0; i < vocab.token_types.size(); ++i) types_[i] = TokenType(vocab.token_types[i]);
    if (vocab.token_types.empty()) infer_types(vocab);
    special_.bos = vocab.bos_id;
    special_.eos = vocab.eos_id;
    special_.unk = vocab.unk_id;
    special_.pad = vocab.pad_id;
    special_.add_bos = vocab.add_bos.value_or(true) && special_.bos >= 0;
    special_.add_eos = vocab.add_eos.value_or(false) && special_.eos >= 0;
    add_space_prefix_ = vocab.add_space_prefix.value_or(true);
    index_tokens();
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override {
    std::vector<int32_t> ids;
    if (add_special && special_.add_bos) ids.push_back(special_.bos);
    bool prev_special = true;  // the first fragment gets the space prefix too
    size_t seg_start = 0;
    for (size_t pos = 0; pos < text.size();) {
      size_t len = 0;
      int32_t id = match_special(text, pos, parse_special, &len);
      if (id < 0) {
        ++pos;
        continue;
      }
      if (pos > seg_start) encode_fragment(text.substr(seg_start, pos - seg_start), prev_special, &ids);
      ids.push_back(id);
      prev_special = true;
      pos += len;
      seg_start = pos;
    }
    if (seg_start < text.size()) encode_fragment(text.substr(seg_start), prev_special, &ids);
    if (add_special && special_.add_eos) ids.push_back(special_.eos);
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      const std::string& text = tokens_[id];
      switch (types_[id]) {
        case TokenType::kControl:
        case TokenType::kUnknown:
          if (!skip_special) out += text;
          break;
        case TokenType::kByte:
          out.push_back(static_cast<char>(byte_value(text)));
          break;
        case TokenType::kUserDefined:
          out += text;  // added tokens are written as they are
          break;
        case TokenType::kUndefined:
        case TokenType::kNormal:
        case TokenType::kUnused:
          append_unescaped(text, &out);
          break;
      }
    }
    // HF's Strip decoder / sentencepiece: only the sequence's first space goes.
    if (add_space_prefix_ && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return utf8_sanitize(out);
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  std::string token_text(int32_t id) const override {
    return (id >= 0 && id < vocab_size()) ? tokens_[id] : "";
  }
  bool is_special(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return false;
    return types_[id] == TokenType::kControl || types_[id] == TokenType::kUnknown;
  }
  TokenSpelling token_spelling() const override { return TokenSpelling::kByteFallback; }
  const SpecialTokenIds& special_ids() const override { return special_; }
  std::string describe() const override {
    return str_cat("GGUF llama (SentencePiece) vocabulary, ", tokens_.size(), " tokens");
  }

 private:
  // Without token_types: bos/eos are control, unk unknown, "<0xNN>" bytes.
  void infer_types(const VocabData& vocab) {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      if (byte_value(tokens_[i]) >= 0) types_[i] = TokenType::kByte;
    }
    for (int32_t id : {vocab.bos_id, vocab.eos_id, vocab.pad_id}) {
      if (id >= 0) types_[id] = TokenType::kControl;
    }
    if (vocab.unk_id >= 0) types_[vocab.unk_id] = TokenType::kUnknown;
  }

  // 0..255 for "<0xNN>", else -1.
  static int byte_value(const std::string& text) {
    if (text.size() != 6 || !text.starts_with("<0x") || text[5] != '>') return -1;
    int value = 0;
    for (size_t i = 3; i < 5; ++i) {
      char c = text[i];
      int digit = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (digit < 0) return -1;
      value = value * 16 + digit;
    }
    return value;
  }

  static void append_unescaped(const std::string& text, std::string* out) {
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
        out->push_back(' ');
        i += kSpaceSymbol.size();
      } else {
        out->push_back(text[i++]);
      }
    }
  }

  void index_tokens() {
    std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const int32_t id = static_cast<int32_t>(i);
      const std::string& text = tokens_[i];
      switch (types_[i]) {
        case TokenType::kByte:
          if (int b = byte_value(text); b >= 0 && byte_ids_[b] < 0) byte_ids_[b] = id;
          break;
        case TokenType::kControl:
        case TokenType::kUnknown:
        case TokenType::kUserDefined:
          special_by_text_[text] = id;
          special_lengths_.push_back(text.size());
          first_bytes_[static_cast<uint8_t>(text[0])] = true;
          if (types_[i] == TokenType::kUserDefined) mergeable_[text] = id;
          break;
        case TokenType::kUndefined:
        case TokenType::kNormal:
        case TokenType::kUnused:
          mergeable_[text] = id;  // a later duplicate wins, as in llama.cpp
          break;
      }
    }
    // llama.cpp's byte_to_token: fall back to a one-byte token of that text.
    for (int b = 0; b < 256; ++b) {
      if (byte_ids_[b] >= 0) continue;
      auto it = mergeable_.find(std::string(1, static_cast<char>(b)));
      byte_ids_[b] = it != mergeable_.end() ? it->second : special_.unk;
    }
    std::sort(special_lengths_.rbegin(), special_lengths_.rend());
    special_lengths_.erase(std::unique(special_lengths_.begin(), special_lengths_.end()),
                           special_lengths_.end());
  }

  // The special token spelled at text[pos] (longest first), or -1. Control and
  // unknown tokens count only when parse_special; user-defined ones always.
  int32_t match_special(std::string_view text, size_t pos, bool parse_special, size_t* len) const {
    if (!first_bytes_[static_cast<uint8_t>(text[pos])]) return -1;
    for (size_t l : special_lengths_) {
      if (pos + l > text.size()) continue;
      auto it = special_by_text_.find(std::string(text.substr(pos, l)));
      if (it == special_by_text_.end()) continue;
      if (!parse_special && types_[it->second] != TokenType::kUserDefined) continue;
      *len = l;
      return it->second;
    }
    return -1;
  }

  void encode_fragment(std::string_view fragment, bool prefix_space, std::vector<int32_t>* ids) const {
    std::string escaped;
    escaped.reserve(fragment.size() * 3 + 3);
    if (add_space_prefix_ && prefix_space) escaped += kSpaceSymbol;
    for (char c : fragment) {
      if (c == ' ') {
        escaped += kSpaceSymbol;
      } else {
        escaped.push_back(c);
      }
    }
    merge_and_emit(escaped, ids);
  }

  void merge_and_emit(const std::string& text, std::vector<int32_t>* ids) const;
  using RevMerge = std::unordered_map<std::string, std::pair<int, int>>;
  void resegment(const std::string& text, size_t offset, size_t size,
                 const std::vector<Symbol>& symbols, const RevMerge& rev_merge,
                 std::vector<int32_t>* ids) const;
  void emit_bytes(std::string_view piece, std::vector<int32_t>* ids) const {
    for (char c : piece) {
      int32_t id = byte_ids_[static_cast<uint8_t>(c)];
      if (id >= 0) ids->push_back(id);  // no byte token and no unk: the byte is dropped
    }
  }

  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  SpecialTokenIds special_;
  bool add_space_prefix_ = true;
  std::unordered_map<std::string, int32_t> mergeable_;        // normal, user-defined, unused
  std::unordered_map<std::string, int32_t> special_by_text_;  // control, unknown, user-defined
  std::vector<size_t> special_lengths_;                       // distinct, longest first
  bool first_bytes_[256] = {};
  int32_t byte_ids_[256];
};

// llama.cpp's llm_tokenizer_spm_session::tokenize: start from UTF-8 chars,
// repeatedly merge the best-scoring adjacent pair that is a token, then emit
// each final symbol (resegmenting what is not a usable token).
void GgufSpmTokenizer::merge_and_emit(const std::string& text, std::vector<int32_t>* ids) const {
  std::vector<Symbol> symbols;
  for (size_t offset = 0; offset < text.size();) {
    size_t len = std::min(utf8_len_from_lead(static_cast<uint8_t>(text[offset])), text.size() - offset);
    int index = static_cast<int>(symbols.size());
    symbols.push_back({offset, len, index - 1, offset + len == text.size() ? -1 : index + 1});
    offset += len;
  }
  if (symbols.empty()) return;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  RevMerge rev_merge;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    std::string piece = text.substr(symbols[left].offset, symbols[left].size + symbols[right].size);
    auto it = mergeable_.find(piece);
    if (it == mergeable_.end()) return;
    queue.push({left, right, scores_[it->second], piece.size()});
    rev_merge[piece] = {left, right};
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);
  while (!queue.empty()) {
    Bigram bigram = queue.top();
    queue.pop();
    Symbol& left = symbols[bigram.left];
    Symbol& right = symbols[bigram.right];
    // Stale: one side was merged away since this pair was queued.
    if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }
  for (int i = 0; i != -1; i = symbols[i].next) {
    resegment(text, symbols[i].offset, symbols[i].size, symbols, rev_merge, ids);
  }
}

void GgufSpmTokenizer::resegment(const std::string& text, size_t offset, size_t size,
                                 const std::vector<Symbol>& symbols, const RevMerge& rev_merge,
                                 std::vector<int32_t>* ids) const {
  std::string piece = text.substr(offset, size);
  auto it = mergeable_.find(piece);
  if (it != mergeable_.end() && types_[it->second] != TokenType::kUnused) {
    ids->push_back(it->second);
    return;
  }
  // An unused token (or, defensively, any non-token) is split back at the
  // point where its two halves were merged; the map is keyed by text, so the
  // split point is taken relative to the recorded pair.
  auto merged = rev_merge.find(piece);
  if (merged == rev_merge.end()) {
    emit_bytes(piece, ids);
    return;
  }
  size_t left_len = symbols[merged->second.second].offset - symbols[merged->second.first].offset;
  if (left_len == 0 || left_len >= size) {
    emit_bytes(piece, ids);
    return;
  }
  resegment(text, offset, left_len, symbols, rev_merge, ids);
  resegment(text, offset + left_len, size - left_len, symbols, rev_merge, ids);
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> make_spm_tokenizer_from_vocab(const VocabData& vocab) {
  ZL_RETURN_IF_ERROR(validate_vocab(vocab).with_prefix("GGUF llama tokenizer"));
  return std::unique_ptr<Tokenizer>(std::make_unique<GgufSpmTokenizer>(vocab));
}

}  // namespace zl
