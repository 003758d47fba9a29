// The string stages of a Hugging Face tokenizer pipeline before the model:
// normalizers (text -> text) and pre-tokenizers (text -> words), mirroring
// `tokenizers`' NormalizedString::split semantics (empty pieces are dropped,
// split behaviours Removed / Isolated / MergedWith* / Contiguous).
//
// All text here is valid UTF-8 (the tokenizer repairs input first), so PCRE2
// runs without UTF checks. Steps are immutable once built; safe across threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zerolayer/status.h"

struct pcre2_real_code_8;

namespace zl {

// A compiled PCRE2 pattern (UTF + UCP, JIT when available).
class Regex {
 public:
  static StatusOr<std::shared_ptr<const Regex>> compile(const std::string& pattern);
  // A pattern that matches `literal` exactly.
  static std::string escape(std::string_view literal);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping, non-empty matches [begin, end) from left to right.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  explicit Regex(pcre2_real_code_8* code) : code_(code) {}
  pcre2_real_code_8* code_;
};

// The split regexes of common byte-level BPE tokenizers.
extern const char* const kGpt2SplitRegex;
extern const char* const kLlama3SplitRegex;
extern const char* const kQwen2SplitRegex;

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// One word on its way to the model. `at_origin`: it starts at offset 0 of
// the original text (Metaspace's prepend_scheme "first" looks at this).
struct Piece {
  std::string text;
  bool at_origin = false;
};

struct NormalizerStep {
  enum class Kind { kNfc, kPrepend, kReplace, kStrip };
  Kind kind = Kind::kNfc;
  std::string text;                     // kPrepend: the prefix; kReplace: the content
  std::shared_ptr<const Regex> regex;   // kReplace: what to replace
  bool strip_left = false, strip_right = false;  // kStrip
};

std::string apply_normalizers(const std::vector<NormalizerStep>& steps, std::string text);

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  enum class Prepend { kAlways, kFirst, kNever };
  Kind kind = Kind::kSplit;
  std::shared_ptr<const Regex> regex;   // kSplit; kByteLevel when it splits (use_regex)
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;                  // kSplit: the non-matches are the delimiters
  bool add_prefix_space = false;        // kByteLevel
  std::string replacement;              // kMetaspace, e.g. "▁"
  Prepend prepend = Prepend::kAlways;   // kMetaspace
  bool split = false;                   // kMetaspace: also split before each replacement
};

// Runs the steps in order over all pieces; empty pieces are dropped.
void apply_pre_tokenizers(const std::vector<PreTokenizerStep>& steps, std::vector<Piece>* pieces);

}  // namespace zl
