#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/log.h"
#include "tokenizer/unicode_util.h"

namespace zl {

const char* const kGpt2SplitRegex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2SplitRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

StatusOr<std::shared_ptr<const Regex>> Regex::compile(const std::string& pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return invalid_argument("regex /", pattern, "/ does not compile at offset ", error_offset, ": ",
                            reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: falls back to the interpreter
  return std::shared_ptr<const Regex>(new Regex(code));
}

std::string Regex::escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out;
}

Regex::~Regex() { pcre2_code_free(code_); }

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset <= text.size()) {
    const int rc = pcre2_match(code_, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc < 0) {
      // A match-limit (or JIT stack) error leaves the rest as one unmatched
      // piece: still a valid tokenization, just not HF's.
      if (rc != PCRE2_ERROR_NOMATCH) log_warn("tokenizer split regex failed with PCRE2 error ", rc);
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      offset = end;
    } else {
      // An empty match: step over one character so the scan always advances.
      if (begin >= text.size()) break;
      offset = begin + unicode::char_len(text, begin);
    }
  }
  pcre2_match_data_free(data);
  return matches;
}

namespace {

// tokenizers' NormalizedString::split for one piece.
void split_piece(const Piece& piece, const Regex& regex, SplitBehavior behavior, bool invert,
                 std::vector<Piece>* out) {
  struct Span {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Span> spans;
  size_t prev = 0;
  for (const auto& [begin, end] : regex.find_all(piece.text)) {
    if (begin > prev) spans.push_back({prev, begin, invert});
    spans.push_back({begin, end, !invert});
    prev = end;
  }
  if (prev < piece.text.size()) spans.push_back({prev, piece.text.size(), invert});

  std::vector<Span> merged;
  switch (behavior) {
    case SplitBehavior::kRemoved:
    case SplitBehavior::kIsolated:
      merged.swap(spans);
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match == previous_match && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.is_match && !previous_match && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back({s.begin, s.end, false});
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      // A match joins the non-match right after it (forward form of
      // tokenizers' right-to-left fold).
      size_t carry = std::string::npos;
      for (size_t i = 0; i < spans.size(); ++i) {
        const size_t begin = carry != std::string::npos ? carry : spans[i].begin;
        carry = std::string::npos;
        if (spans[i].is_match && i + 1 < spans.size() && !spans[i + 1].is_match) {
          carry = begin;
        } else {
          merged.push_back({begin, spans[i].end, false});
        }
      }
      break;
    }
  }
  for (const Span& s : merged) {
    if (behavior == SplitBehavior::kRemoved && s.is_match) continue;
    if (s.end == s.begin) continue;
    out->push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_origin && s.begin == 0});
  }
}

std::string byte_level_map(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (char c : text) out += unicode::byte_to_char_utf8(static_cast<uint8_t>(c));
  return out;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t hit = from.empty() ? std::string_view::npos : text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

void apply_metaspace(const PreTokenizerStep& step, std::vector<Piece>* pieces) {
  std::vector<Piece> out;
  for (Piece& piece : *pieces) {
    piece.text = replace_all(piece.text, " ", step.replacement);
    const bool starts = piece.text.compare(0, step.replacement.size(), step.replacement) == 0;
    const bool prepend = step.prepend == PreTokenizerStep::Prepend::kAlways ||
                         (step.prepend == PreTokenizerStep::Prepend::kFirst && piece.at_origin);
    if (prepend && !starts) piece.text = step.replacement + piece.text;
    if (!step.split) {
      if (!piece.text.empty()) out.push_back(std::move(piece));
      continue;
    }
    // Split before every replacement character (MergedWithNext).
    size_t begin = 0;
    for (size_t pos = step.replacement.size(); pos <= piece.text.size(); ++pos) {
      if (pos == piece.text.size() || piece.text.compare(pos, step.replacement.size(), step.replacement) == 0) {
        out.push_back({piece.text.substr(begin, pos - begin), piece.at_origin && begin == 0});
        begin = pos;
      }
    }
  }
  *pieces = std::move(out);
}

}  // namespace

std::string apply_normalizers(const std::vector<NormalizerStep>& steps, std::string text) {
  for (const NormalizerStep& step : steps) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc:
        text = unicode::nfc(text);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!text.empty()) text = step.text + text;
        break;
      case NormalizerStep::Kind::kReplace: {
        std::string out;
        size_t prev = 0;
        for (const auto& [begin, end] : step.regex->find_all(text)) {
          out.append(text, prev, begin - prev);
          out.append(step.text);
          prev = end;
        }
        out.append(text, prev, std::string::npos);
        text = std::move(out);
        break;
      }
      case NormalizerStep::Kind::kStrip: {
        size_t begin = 0, end = text.size();
        char32_t cp;
        while (step.strip_left && begin < end) {
          const size_t len = unicode::decode_utf8(text, begin, &cp);
          if (len == 0 || !unicode::is_whitespace(cp)) break;
          begin += len;
        }
        while (step.strip_right && end > begin) {
          size_t start = end - 1;
          while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
          const size_t len = unicode::decode_utf8(text, start, &cp);
          if (len == 0 || !unicode::is_whitespace(cp)) break;
          end = start;
        }
        text = text.substr(begin, end - begin);
        break;
      }
    }
  }
  return text;
}

void apply_pre_tokenizers(const std::vector<PreTokenizerStep>& steps, std::vector<Piece>* pieces) {
  for (const PreTokenizerStep& step : steps) {
    switch (step.kind) {
      case PreTokenizerStep::Kind::kSplit: {
        std::vector<Piece> out;
        for (const Piece& piece : *pieces) split_piece(piece, *step.regex, step.behavior, step.invert, &out);
        *pieces = std::move(out);
        break;
      }
      case PreTokenizerStep::Kind::kByteLevel: {
        std::vector<Piece> out;
        for (Piece& piece : *pieces) {
          if (step.add_prefix_space && piece.text.compare(0, 1, " ") != 0) piece.text = " " + piece.text;
          if (step.regex) {
            split_piece(piece, *step.regex, SplitBehavior::kIsolated, false, &out);
          } else if (!piece.text.empty()) {
            out.push_back(std::move(piece));
          }
        }
        for (Piece& piece : out) piece.text = byte_level_map(piece.text);
        *pieces = std::move(out);
        break;
      }
      case PreTokenizerStep::Kind::kMetaspace:
        apply_metaspace(step, pieces);
        break;
    }
  }
}

}  // namespace zl
