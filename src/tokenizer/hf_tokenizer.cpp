// The runtime of tokenizer.json-style tokenizers (HfTokenizer) and the GGUF
// "gpt2" builder. Encoding follows tokenizers' Tokenizer::encode:
//   1. added tokens with normalized=false are split out of the raw text;
//   2. every other piece is normalized, then added tokens with
//      normalized=true are split out of it;
//   3. the rest is pre-tokenized into words and each word goes through BPE;
//   4. the post-processor's prefix/suffix ids are added.
// The json loader is hf_json.cpp.
#include "tokenizer/hf_tokenizer.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/log.h"
#include "tokenizer/hf_tokenizer_impl.h"
#include "tokenizer/unicode_util.h"

namespace zl {
namespace {

// Leftmost-longest matching of added-token contents (tokenizers uses
// aho-corasick with MatchKind::LeftmostLongest).
class TokenTrie {
 public:
  void insert(const std::string& pattern, int32_t token_index) {
    if (pattern.empty()) return;
    int32_t node = 0;
    for (char c : pattern) {
      auto& next = nodes_[node].next;
      const auto it = next.find(static_cast<uint8_t>(c));
      if (it != next.end()) {
        node = it->second;
      } else {
        next[static_cast<uint8_t>(c)] = static_cast<int32_t>(nodes_.size());
        node = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
      }
    }
    if (nodes_[node].token < 0) nodes_[node].token = token_index;  // first one wins
  }
  // The longest pattern starting at `pos`: its token index and length, or -1.
  int32_t longest_at(std::string_view text, size_t pos, size_t* length) const {
    int32_t node = 0, best = -1;
    for (size_t i = pos; i < text.size(); ++i) {
      const auto& next = nodes_[node].next;
      const auto it = next.find(static_cast<uint8_t>(text[i]));
      if (it == next.end()) break;
      node = it->second;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        *length = i + 1 - pos;
      }
    }
    return best;
  }
  bool empty() const { return nodes_.size() == 1; }

 private:
  struct Node {
    std::map<uint8_t, int32_t> next;
    int32_t token = -1;
  };
  std::vector<Node> nodes_{1};
};

struct Segment {
  size_t begin, end;
  int32_t token_index;  // -1: plain text
};

bool last_char_is(std::string_view text, bool (*pred)(char32_t)) {
  if (text.empty()) return false;
  size_t start = text.size() - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  char32_t cp;
  return unicode::decode_utf8(text, start, &cp) > 0 && pred(cp);
}

bool is_word_char(char32_t cp) {
  // Approximates Rust's char::is_alphanumeric for single_word tokens.
  return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_' ||
         (cp >= 0x80 && !unicode::is_whitespace(cp));
}

class HfTokenizer final : public Tokenizer {
 public:
  explicit HfTokenizer(HfTokenizerSpec spec) : spec_(std::move(spec)) {
    vocab_size_ = spec_.model->max_id() + 1;
    for (size_t i = 0; i < spec_.added_tokens.size(); ++i) {
      const AddedToken& token = spec_.added_tokens[i];
      vocab_size_ = std::max(vocab_size_, token.id + 1);
      added_by_id_[token.id] = static_cast<int32_t>(i);
      decoded_added_.push_back(token.content);
      if (!token.normalized) {
        raw_trie_.insert(token.content, static_cast<int32_t>(i));
        if (token.special) skipped_on_decode_.insert(token.content);
      } else {
        const std::string normalized = apply_normalizers(spec_.normalizers, token.content);
        normalized_trie_.insert(normalized, static_cast<int32_t>(i));
        // tokenizers stores (and so decodes) the normalized content, e.g.
        // Llama-2's "<s>" becomes "▁<s>" and decodes with a space before it.
        decoded_added_.back() = normalized;
        // tokenizers keeps the normalized content in its special set, so
        // decode only skips the token when normalizing left it unchanged.
        if (token.special && normalized == token.content) skipped_on_decode_.insert(token.content);
      }
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override {
    const std::string valid = unicode::to_valid_utf8(text);
    std::vector<int32_t> ids;
    if (add_special) ids = spec_.prefix_ids;
    for (const Segment& raw : split_added(valid, raw_trie_, parse_special)) {
      if (raw.token_index >= 0) {
        ids.push_back(spec_.added_tokens[raw.token_index].id);
        continue;
      }
      const std::string normalized =
          apply_normalizers(spec_.normalizers, valid.substr(raw.begin, raw.end - raw.begin));
      for (const Segment& seg : split_added(normalized, normalized_trie_, parse_special)) {
        if (seg.token_index >= 0) {
          ids.push_back(spec_.added_tokens[seg.token_index].id);
          continue;
        }
        std::vector<Piece> pieces{{normalized.substr(seg.begin, seg.end - seg.begin),
                                   raw.begin == 0 && seg.begin == 0}};
        apply_pre_tokenizers(spec_.pre_tokenizers, &pieces);
        for (const Piece& piece : pieces) spec_.model->encode_word(piece.text, &ids);
      }
    }
    if (add_special) ids.insert(ids.end(), spec_.suffix_ids.begin(), spec_.suffix_ids.end());
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size_) continue;
      const auto it = added_by_id_.find(id);
      if (it == added_by_id_.end() && spec_.model->id_to_token(id).empty()) continue;  // a hole
      const std::string& token =
          it != added_by_id_.end() ? decoded_added_[it->second] : spec_.model->id_to_token(id);
      if (skip_special && skipped_on_decode_.count(token)) continue;
      tokens.push_back(token);
    }
    if (!spec_.has_decoder) {
      std::string text;
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i > 0) text += ' ';
        text += tokens[i];
      }
      return text;
    }
    return run_decoders(spec_.decoders, std::move(tokens));
  }

  int32_t vocab_size() const override { return vocab_size_; }
  std::string token_text(int32_t id) const override {
    const auto it = added_by_id_.find(id);
    return it != added_by_id_.end() ? spec_.added_tokens[it->second].content : spec_.model->id_to_token(id);
  }
  bool is_special(int32_t id) const override {
    const auto it = added_by_id_.find(id);
    return it != added_by_id_.end() && spec_.added_tokens[it->second].special;
  }
  // From the decoder chain: ByteLevel maps characters back to bytes;
  // ByteFallback / Metaspace (or a Replace of ▁) read SentencePiece pieces.
  TokenSpelling token_spelling() const override {
    TokenSpelling spelling = TokenSpelling::kRaw;
    for (const DecoderStep& step : spec_.decoders) {
      if (step.kind == DecoderStep::Kind::kByteLevel) return TokenSpelling::kByteLevel;
      if (step.kind == DecoderStep::Kind::kByteFallback || step.kind == DecoderStep::Kind::kMetaspace ||
          (step.kind == DecoderStep::Kind::kReplace && step.from == "\u2581")) {
        spelling = TokenSpelling::kByteFallback;
      }
    }
    return spelling;
  }
  const SpecialTokenIds& special_ids() const override { return spec_.special; }
  std::string describe() const override { return spec_.description; }

 private:
  // tokenizers' AddedVocabulary::find_matches: splits `text` around added
  // tokens, honouring single_word / lstrip / rstrip.
  std::vector<Segment> split_added(std::string_view text, const TokenTrie& trie, bool parse_special) const {
    std::vector<Segment> segments;
    size_t start_offset = 0;
    for (size_t pos = 0; pos < text.size() && !trie.empty();) {
      size_t length = 0;
      const int32_t index = trie.longest_at(text, pos, &length);
      if (index < 0) {
        ++pos;
        continue;
      }
      const AddedToken& token = spec_.added_tokens[index];
      size_t start = pos, stop = pos + length;
      pos = stop;
      if (!parse_special && token.special) continue;
      if (token.single_word && (last_char_is(text.substr(0, start), is_word_char) ||
                                (stop < text.size() && is_word_char_at(text, stop)))) {
        continue;
      }
      if (token.lstrip) {
        while (start > start_offset && last_char_is(text.substr(0, start), unicode::is_whitespace)) {
          do { --start; } while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80);
        }
      }
      if (token.rstrip) {
        char32_t cp;
        size_t len;
        while (stop < text.size() && (len = unicode::decode_utf8(text, stop, &cp)) > 0 &&
               unicode::is_whitespace(cp)) {
          stop += len;
        }
      }
      if (start > start_offset) segments.push_back({start_offset, start, -1});
      segments.push_back({start, stop, index});
      start_offset = stop;
      pos = std::max(pos, stop);
    }
    if (start_offset < text.size()) segments.push_back({start_offset, text.size(), -1});
    return segments;
  }
  static bool is_word_char_at(std::string_view text, size_t pos) {
    char32_t cp;
    return unicode::decode_utf8(text, pos, &cp) > 0 && is_word_char(cp);
  }

  HfTokenizerSpec spec_;
  int32_t vocab_size_ = 0;
  std::unordered_map<int32_t, int32_t> added_by_id_;  // id -> index in added_tokens (last wins)
  std::vector<std::string> decoded_added_;  // per added token: the string decode uses
  std::unordered_set<std::string> skipped_on_decode_;
  TokenTrie raw_trie_, normalized_trie_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_hf_tokenizer(HfTokenizerSpec spec) {
  return std::make_unique<HfTokenizer>(std::move(spec));
}

}  // namespace zl
