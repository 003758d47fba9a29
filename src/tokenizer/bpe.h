// The BPE model of Hugging Face `tokenizers` (models/bpe): a word is split into
// characters (missing ones become <0xNN> byte tokens with byte_fallback, else
// the unk token, else dropped), then the lowest-ranked adjacent pair is merged,
// leftmost first, until no merge applies. Results are cached per word.
//
// Immutable after build() apart from the cache, which is guarded by a mutex,
// so encode_word may be called from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "zerolayer/status.h"

namespace zl {

struct BpeOptions {
  std::string unk_token;                 // "" for none
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;            // a word that is itself a token skips merging
  std::string continuing_subword_prefix; // "" for none
  std::string end_of_word_suffix;        // "" for none
};

class BpeModel {
 public:
  // `vocab`: token -> id; `merges`: pairs in rank order. Errors name what is
  // wrong (a merge of unknown tokens, an unk token not in the vocab, ...);
  // callers prefix the file name.
  static StatusOr<std::unique_ptr<BpeModel>> build(
      std::unordered_map<std::string, int32_t> vocab,
      const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int32_t>* ids) const;

  // "" when `id` is not in the vocab.
  const std::string& id_to_token(int32_t id) const;
  int32_t token_to_id(std::string_view token) const;  // -1 when absent
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }

 private:
  BpeModel() = default;
  void merge_word(std::string_view word, std::vector<int32_t>* ids) const;

  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id)
  BpeOptions options_;
  int32_t unk_id_ = -1;
  int32_t byte_ids_[256];  // <0xNN> tokens, -1 when absent

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace zl
