// tokenizer.model through libsentencepiece. Plain encode/decode are
// sentencepiece's own; this file adds what HF's slow LlamaTokenizer adds on
// top: bos/eos, special tokens spelled in the text, and the config file.
//
// parse_special follows LlamaTokenizer: control pieces and <unk> spelled in
// the text are split out first, and the text between them is encoded
//   legacy (default, Llama-2, llama.cpp): each segment by sentencepiece as is,
//     so each gets the dummy "▁" prefix ("<s>Hi" -> <s> ▁Hi);
//   legacy=false in tokenizer_config.json (Mistral v0.3): "▁" is prepended to
//     the whole text once (add_prefix_space) and the segments are encoded
//     without a dummy prefix, via HF's own trick of encoding "<unk>" + segment
//     and dropping the <unk> pieces ("<s>Hi" -> <s> Hi).
// Without parse_special, encode is exactly sentencepiece's Encode.
// decode(skip_special=false) writes control pieces as text and keeps the
// space of the piece after them, as HF's fast tokenizer does ("<s> Hello").
#include "tokenizer/spm_tokenizer.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace zl {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // "▁"

struct SpmConfig {
  std::optional<bool> add_bos;
  std::optional<bool> add_eos;
  bool legacy = true;
  bool add_prefix_space = true;
  // Token contents named by the config, "" when absent.
  std::string bos, eos, unk, pad;
};

std::string token_content(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_object() && j.contains("content") && j["content"].is_string()) {
    return j["content"].get<std::string>();
  }
  return "";
}

StatusOr<SpmConfig> read_config(const std::string& config_dir) {
  SpmConfig config;
  if (config_dir.empty()) return config;
  const std::string path = (std::filesystem::path(config_dir) / "tokenizer_config.json").string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return config;  // the file is optional
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return data_loss(path, ": not a JSON object");
  auto read_bool = [&](const char* key) -> std::optional<bool> {
    if (j.contains(key) && j[key].is_boolean()) return j[key].get<bool>();
    return std::nullopt;
  };
  config.add_bos = read_bool("add_bos_token");
  config.add_eos = read_bool("add_eos_token");
  config.legacy = read_bool("legacy").value_or(true);
  config.add_prefix_space = read_bool("add_prefix_space").value_or(true);
  if (j.contains("bos_token")) config.bos = token_content(j["bos_token"]);
  if (j.contains("eos_token")) config.eos = token_content(j["eos_token"]);
  if (j.contains("unk_token")) config.unk = token_content(j["unk_token"]);
  if (j.contains("pad_token")) config.pad = token_content(j["pad_token"]);
  return config;
}

class SpmTokenizer final : public Tokenizer {
 public:
  SpmTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp, const SpmConfig& config,
               std::string path)
      : sp_(std::move(sp)), legacy_(config.legacy), add_prefix_space_(config.add_prefix_space),
        path_(std::move(path)) {
    special_.bos = sp_->bos_id();
    special_.eos = sp_->eos_id();
    special_.unk = sp_->unk_id();
    special_.pad = sp_->pad_id();
    override_id(config.bos, &special_.bos);
    override_id(config.eos, &special_.eos);
    override_id(config.unk, &special_.unk);
    override_id(config.pad, &special_.pad);
    special_.add_bos = config.add_bos.value_or(true) && special_.bos >= 0;
    special_.add_eos = config.add_eos.value_or(false) && special_.eos >= 0;
    for (int32_t id = 0; id < sp_->GetPieceSize(); ++id) {
      if (!is_special(id)) continue;
      const std::string& piece = sp_->IdToPiece(id);
      if (piece.empty()) continue;
      special_by_text_.emplace(piece, id);
      special_lengths_.push_back(piece.size());
      first_bytes_[static_cast<uint8_t>(piece[0])] = true;
    }
    std::sort(special_lengths_.rbegin(), special_lengths_.rend());
    special_lengths_.erase(std::unique(special_lengths_.begin(), special_lengths_.end()),
                           special_lengths_.end());
    if (special_.unk >= 0) {
      unk_text_ = sp_->IdToPiece(special_.unk);
      unk_prefix_len_ = encode_plain(unk_text_).size();
    }
  }

  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              bool parse_special) const override {
    std::vector<int32_t> ids;
    if (add_special && special_.add_bos) ids.push_back(special_.bos);
    if (!parse_special) {
      append(&ids, encode_plain(text));
    } else if (legacy_) {
      encode_split(text, [&](std::string_view seg, bool) { append(&ids, encode_plain(seg)); }, &ids);
    } else {
      encode_non_legacy(text, &ids);
    }
    if (add_special && special_.add_eos) ids.push_back(special_.eos);
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    std::vector<int> run;
    bool at_start = true;
    auto flush_run = [&] {
      if (run.empty()) return;
      std::string text;
      if (!sp_->Decode(run, &text).ok()) text.clear();  // ids are checked, so this cannot fail
      // sentencepiece strips the leading "▁" of a run's first piece (all of
      // them with remove_extra_whitespaces); only the sequence's first piece
      // should lose it, so put back what went missing.
      if (!at_start) {
        std::string_view piece = sp_->IdToPiece(run[0]);
        size_t num_marks = 0;
        while (piece.substr(num_marks * kSpaceSymbol.size()).starts_with(kSpaceSymbol)) ++num_marks;
        std::string first;
        if (!sp_->Decode(std::vector<int>{run[0]}, &first).ok()) first.clear();
        size_t num_spaces = first.find_first_not_of(' ');
        if (num_spaces == std::string::npos) num_spaces = first.size();
        if (num_marks > num_spaces) text.insert(0, num_marks - num_spaces, ' ');
      }
      out += text;
      at_start = false;
      run.clear();
    };
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      if (is_special(id)) {
        if (skip_special) continue;
        flush_run();
        out += sp_->IdToPiece(id);
        at_start = false;
      } else {
        run.push_back(id);
      }
    }
    flush_run();
    return out;
  }

  int32_t vocab_size() const override { return sp_->GetPieceSize(); }
  std::string token_text(int32_t id) const override {
    return (id >= 0 && id < vocab_size()) ? sp_->IdToPiece(id) : "";
  }
  bool is_special(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return false;
    return sp_->IsControl(id) || sp_->IsUnknown(id) || id == special_.bos || id == special_.eos;
  }
  TokenSpelling token_spelling() const override { return TokenSpelling::kByteFallback; }
  const SpecialTokenIds& special_ids() const override { return special_; }
  std::string describe() const override {
    return str_cat("tokenizer.model SentencePiece (", vocab_size(), " pieces", legacy_ ? "" : ", legacy=false",
                   ") from ", path_);
  }

 private:
  void override_id(const std::string& content, int32_t* id) const {
    if (content.empty()) return;
    int32_t found = sp_->PieceToId(content);
    // PieceToId answers unk for unknown pieces; only take a real match.
    if (found >= 0 && sp_->IdToPiece(found) == content) *id = found;
  }

  static void append(std::vector<int32_t>* ids, const std::vector<int>& more) {
    ids->insert(ids->end(), more.begin(), more.end());
  }

  std::vector<int> encode_plain(std::string_view text) const {
    std::vector<int> ids;
    if (!text.empty() && !sp_->Encode(text, &ids).ok()) ids.clear();  // only fails when unloaded
    return ids;
  }

  // Splits `text` at special pieces (longest match first), appending their ids
  // to *ids and handing each plain segment to on_text(segment, is_first).
  template <typename OnText>
  void encode_split(std::string_view text, OnText on_text, std::vector<int32_t>* ids) const {
    size_t seg_start = 0;
    bool first = true;
    for (size_t pos = 0; pos < text.size();) {
      int32_t special = -1;
      size_t len = 0;
      if (first_bytes_[static_cast<uint8_t>(text[pos])]) {
        for (size_t l : special_lengths_) {
          if (pos + l > text.size()) continue;
          auto it = special_by_text_.find(std::string(text.substr(pos, l)));
          if (it != special_by_text_.end()) {
            special = it->second;
            len = l;
            break;
          }
        }
      }
      if (special < 0) {
        ++pos;
        continue;
      }
      if (pos > seg_start) on_text(text.substr(seg_start, pos - seg_start), first);
      first = false;
      ids->push_back(special);
      pos += len;
      seg_start = pos;
    }
    if (seg_start < text.size()) on_text(text.substr(seg_start), first);
  }

  // HF LlamaTokenizer with legacy=false (see the top of the file).
  void encode_non_legacy(std::string_view text, std::vector<int32_t>* ids) const {
    if (text.empty()) return;
    // tokenizer.json's Metaspace (prepend_scheme "first") prepends "▁" only
    // when the text does not already start with a space (or "▁").
    const bool starts_spaced = text.front() == ' ' || text.starts_with(kSpaceSymbol);
    std::string prefixed = add_prefix_space_ && !starts_spaced ? std::string(kSpaceSymbol) : "";
    prefixed += text;
    size_t first_id = ids->size();
    bool lone_prefix = false;
    encode_split(prefixed, [&](std::string_view seg, bool first) {
      std::vector<int> seg_ids = encode_no_dummy_prefix(seg);
      if (first && add_prefix_space_ && seg == kSpaceSymbol && seg_ids.size() == 1) lone_prefix = true;
      append(ids, seg_ids);
    }, ids);
    // HF drops a lone "▁" when the text starts with a special token.
    if (lone_prefix && ids->size() > first_id + 1 && is_special((*ids)[first_id + 1])) {
      ids->erase(ids->begin() + static_cast<std::ptrdiff_t>(first_id));
    }
  }

  std::vector<int> encode_no_dummy_prefix(std::string_view seg) const {
    if (unk_prefix_len_ == 0) return encode_plain(seg);
    std::vector<int> ids = encode_plain(unk_text_ + std::string(seg));
    if (ids.size() < unk_prefix_len_) return ids;
    return std::vector<int>(ids.begin() + static_cast<std::ptrdiff_t>(unk_prefix_len_), ids.end());
  }

  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  bool legacy_;
  bool add_prefix_space_;
  std::string path_;
  SpecialTokenIds special_;
  std::unordered_map<std::string, int32_t> special_by_text_;
  std::vector<size_t> special_lengths_;  // distinct lengths, longest first
  bool first_bytes_[256] = {};
  std::string unk_text_;
  size_t unk_prefix_len_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> load_spm_tokenizer(const std::string& model_path,
                                                        const std::string& config_dir) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(model_path, ec)) {
    return not_found(model_path, ": no such SentencePiece model file");
  }
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  auto st = sp->Load(model_path);
  if (!st.ok()) {
    return data_loss(model_path, ": not a valid SentencePiece model (", st.ToString(), ")");
  }
  if (sp->GetPieceSize() <= 0) return data_loss(model_path, ": SentencePiece model has no pieces");
  ZL_ASSIGN_OR_RETURN(SpmConfig config, read_config(config_dir));
  return std::unique_ptr<Tokenizer>(std::make_unique<SpmTokenizer>(std::move(sp), config, model_path));
}

}  // namespace zl
