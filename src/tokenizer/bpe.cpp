#include "tokenizer/bpe.h"

#include <cstdio>
#include <queue>

#include "tokenizer/unicode_util.h"

namespace zl {
namespace {

constexpr size_t kMaxCachedWordBytes = 256;
constexpr size_t kMaxCacheEntries = 1 << 16;

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

StatusOr<std::unique_ptr<BpeModel>> BpeModel::build(
    std::unordered_map<std::string, int32_t> vocab,
    const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options) {
  std::unique_ptr<BpeModel> model(new BpeModel());
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab) {
    if (id < 0) return data_loss("vocab token \"", token, "\" has a negative id ", id);
    max_id = std::max(max_id, id);
  }
  model->id_to_token_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : vocab) model->id_to_token_[id] = token;
  model->vocab_ = std::move(vocab);

  const size_t prefix_len = options.continuing_subword_prefix.size();
  model->merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int32_t left_id = model->token_to_id(left);
    const int32_t right_id = model->token_to_id(right);
    if (left_id < 0 || right_id < 0) {
      return data_loss("merge ", rank, " (\"", left, "\" \"", right, "\") uses a token that is not in the vocab");
    }
    std::string merged = left;
    if (prefix_len > 0 && right.compare(0, prefix_len, options.continuing_subword_prefix) == 0) {
      merged += right.substr(prefix_len);
    } else {
      merged += right;
    }
    const int32_t new_id = model->token_to_id(merged);
    if (new_id < 0) {
      return data_loss("merge ", rank, " (\"", left, "\" \"", right, "\") makes \"", merged,
                       "\", which is not in the vocab");
    }
    // Later duplicates win, as in tokenizers (it collects the merges into a map).
    model->merges_[pair_key(left_id, right_id)] = {static_cast<int32_t>(rank), new_id};
  }
  if (!options.unk_token.empty()) {
    model->unk_id_ = model->token_to_id(options.unk_token);
    if (model->unk_id_ < 0) return data_loss("unk_token \"", options.unk_token, "\" is not in the vocab");
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    model->byte_ids_[b] = model->token_to_id(name);
  }
  model->options_ = std::move(options);
  return model;
}

const std::string& BpeModel::id_to_token(int32_t id) const {
  static const std::string kEmpty;
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return kEmpty;
  return id_to_token_[id];
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    const int32_t id = token_to_id(word);
    if (id >= 0) {
      ids->push_back(id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(std::string(word));
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word_ids;
  merge_word(word, &word_ids);
  ids->insert(ids->end(), word_ids.begin(), word_ids.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(word_ids));
  }
}

// tokenizers' BPE::merge_word followed by Word::merge_all.
void BpeModel::merge_word(std::string_view word, std::vector<int32_t>* ids) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // indices in `symbols`, -1 at the ends
    bool removed;
  };
  std::vector<Symbol> symbols;
  const auto add = [&](int32_t id) {
    const int32_t index = static_cast<int32_t>(symbols.size());
    if (index > 0) symbols.back().next = index;
    symbols.push_back({id, index - 1, -1, false});
  };
  bool pending_unk = false;  // an unk (possibly fused) not yet added
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = unicode::char_len(word, pos);
    std::string piece(word.substr(pos, len));
    if (pos > 0) piece = options_.continuing_subword_prefix + piece;
    if (pos + len == word.size()) piece += options_.end_of_word_suffix;
    const int32_t id = token_to_id(piece);
    if (id >= 0) {
      if (pending_unk) add(unk_id_);
      pending_unk = false;
      add(id);
    } else {
      bool all_bytes = options_.byte_fallback;
      for (size_t i = 0; all_bytes && i < piece.size(); ++i) all_bytes = byte_ids_[static_cast<uint8_t>(piece[i])] >= 0;
      if (all_bytes) {
        // As tokenizers does, a pending unk is not flushed before the bytes.
        for (char c : piece) add(byte_ids_[static_cast<uint8_t>(c)]);
      } else if (unk_id_ >= 0) {
        if (pending_unk && !options_.fuse_unk) add(unk_id_);
        pending_unk = true;
      }
    }
    pos += len;
  }
  if (pending_unk) add(unk_id_);

  struct Candidate {
    int32_t rank, pos, new_id;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  const auto push_pair = [&](int32_t pos) {
    const Symbol& left = symbols[pos];
    if (left.next < 0) return;
    const auto it = merges_.find(pair_key(left.id, symbols[left.next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_pair(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    const Symbol& right = symbols[left.next];
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale entry
    const int32_t right_index = left.next;
    left.id = top.new_id;
    left.next = right.next;
    symbols[right_index].removed = true;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (!s.removed) ids->push_back(s.id);
  }
}

}  // namespace zl
