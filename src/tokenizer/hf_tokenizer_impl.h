// Internals shared by the tokenizer.json loader (hf_json.cpp), the GGUF "gpt2"
// builder and the runtime (hf_tokenizer.cpp): a fully parsed pipeline spec,
// and the decoder steps. Not part of the public tokenizer API.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace zl {

// tokenizers' AddedToken. `normalized`: matched against normalized text
// (its content normalized too) instead of the raw text.
struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kFuse;
  std::string from, to;       // kReplace; kMetaspace: from = replacement
  std::string strip_char;     // kStrip: one character
  size_t start = 0, stop = 0; // kStrip: how many to strip at each end
  bool prepend = true;        // kMetaspace: prepend_scheme != never
};

// Runs the decoder chain over token strings and joins the result.
std::string run_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens);

struct HfTokenizerSpec {
  std::string description;
  std::unique_ptr<BpeModel> model;
  std::vector<NormalizerStep> normalizers;
  std::vector<PreTokenizerStep> pre_tokenizers;
  std::vector<AddedToken> added_tokens;  // in file order
  std::vector<int32_t> prefix_ids, suffix_ids;  // added by encode(add_special=true)
  bool has_decoder = false;  // without one, decode joins tokens with " "
  std::vector<DecoderStep> decoders;
  SpecialTokenIds special;
};

std::unique_ptr<Tokenizer> make_hf_tokenizer(HfTokenizerSpec spec);

// Splits a merge line "a b" whose tokens may themselves hold spaces: the one
// split where both halves and their concatenation are vocab tokens.
template <typename Vocab>
bool split_merge(const std::string& merge, const Vocab& vocab, std::pair<std::string, std::string>* out) {
  int found = 0;
  for (size_t i = 0; i < merge.size(); ++i) {
    if (merge[i] != ' ') continue;
    std::string left = merge.substr(0, i), right = merge.substr(i + 1);
    if (merge.find(' ', 0) == i && merge.find(' ', i + 1) == std::string::npos) {
      *out = {std::move(left), std::move(right)};  // the usual case: exactly one space
      return true;
    }
    if (vocab.count(left) && vocab.count(right) && vocab.count(left + right)) {
      *out = {std::move(left), std::move(right)};
      ++found;
    }
  }
  return found == 1;
}

}  // namespace zl
