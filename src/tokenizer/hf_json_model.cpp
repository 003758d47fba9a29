// The model, added_tokens and post_processor sections of tokenizer.json, and
// the bos/eos lookup in tokenizer_config.json / special_tokens_map.json.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer_impl.h"

namespace zl {

using Json = nlohmann::json;

namespace {

// 4M ids: 16x the largest vocabularies in use (Gemma 3's 262,144). The BPE
// id table holds a std::string per id up to the largest, so this bound keeps
// it under 128 MiB whatever id a file claims (2^26 let one id cost 2 GiB).
constexpr int64_t kMaxTokenId = (int64_t{1} << 22) - 1;

StatusOr<int32_t> parse_id(const Json& value, const std::string& what) {
  if (!value.is_number_integer()) return data_loss(what, " has an id that is not an integer");
  const int64_t id = value.get<int64_t>();
  if (id < 0 || id > kMaxTokenId) return data_loss(what, " has id ", id, ", out of range [0, ", kMaxTokenId, "]");
  return static_cast<int32_t>(id);
}

std::string optional_string(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A token in tokenizer_config.json: "x", {"content": "x", ...} or null.
std::string config_token(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return optional_string(*it, "content");
  return "";
}

}  // namespace

Status parse_hf_model(const Json& model, HfTokenizerSpec* spec) {
  const std::string type = optional_string(model, "type");
  if (!type.empty() && type != "BPE") return unimplemented("model type \"", type, "\" is not supported (only BPE)");
  const auto vocab_it = model.find("vocab");
  if (vocab_it == model.end() || !vocab_it->is_object()) return data_loss("model has no \"vocab\" object");
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(vocab_it->size());
  for (const auto& [token, value] : vocab_it->items()) {
    ZL_ASSIGN_OR_RETURN(int32_t id, parse_id(value, "vocab token \"" + token + "\""));
    vocab[token] = id;
  }
  const auto merges_it = model.find("merges");
  if (merges_it == model.end() || !merges_it->is_array()) return data_loss("model has no \"merges\" list");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_it->size());
  for (size_t rank = 0; rank < merges_it->size(); ++rank) {
    const Json& merge = (*merges_it)[rank];
    std::pair<std::string, std::string> pair;
    if (merge.is_string()) {
      if (!split_merge(merge.get<std::string>(), vocab, &pair)) {
        return data_loss("merge ", rank, " \"", merge.get<std::string>(), "\" is not two vocab tokens");
      }
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      pair = {merge[0].get<std::string>(), merge[1].get<std::string>()};
    } else {
      return data_loss("merge ", rank, " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    merges.push_back(std::move(pair));
  }
  const auto dropout = model.find("dropout");
  if (dropout != model.end() && dropout->is_number() && dropout->get<double>() > 0.0) {
    return unimplemented("BPE dropout is not supported");
  }
  BpeOptions options;
  options.unk_token = optional_string(model, "unk_token");
  const auto flag = [&](const char* key) {
    const auto it = model.find(key);
    return it != model.end() && it->is_boolean() && it->get<bool>();
  };
  options.fuse_unk = flag("fuse_unk");
  options.byte_fallback = flag("byte_fallback");
  options.ignore_merges = flag("ignore_merges");
  options.continuing_subword_prefix = optional_string(model, "continuing_subword_prefix");
  options.end_of_word_suffix = optional_string(model, "end_of_word_suffix");
  ZL_ASSIGN_OR_RETURN(spec->model, BpeModel::build(std::move(vocab), merges, std::move(options)));
  return ok_status();
}

Status parse_hf_added_tokens(const Json& root, HfTokenizerSpec* spec) {
  const auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return ok_status();
  if (!it->is_array()) return data_loss("\"added_tokens\" is not a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& obj = (*it)[i];
    const std::string what = str_cat("added_tokens[", i, "]");
    if (!obj.is_object() || !obj.contains("id") || !obj.contains("content") || !obj["content"].is_string()) {
      return data_loss(what, " needs an \"id\" and a string \"content\"");
    }
    AddedToken token;
    ZL_ASSIGN_OR_RETURN(token.id, parse_id(obj["id"], what));
    token.content = obj["content"].get<std::string>();
    if (token.content.empty()) return data_loss(what, " has empty content");
    const auto flag = [&](const char* key, bool fallback) {
      const auto f = obj.find(key);
      return f != obj.end() && f->is_boolean() ? f->get<bool>() : fallback;
    };
    token.special = flag("special", false);
    token.lstrip = flag("lstrip", false);
    token.rstrip = flag("rstrip", false);
    token.single_word = flag("single_word", false);
    token.normalized = flag("normalized", !token.special);
    spec->added_tokens.push_back(std::move(token));
  }
  return ok_status();
}

namespace {

// A special token's ids: special_tokens[name].ids in TemplateProcessing.
StatusOr<std::vector<int32_t>> template_special_ids(const Json& obj, const std::string& name) {
  const auto specials = obj.find("special_tokens");
  if (specials == obj.end() || !specials->is_object() || !specials->contains(name)) {
    return data_loss("post_processor TemplateProcessing uses \"", name, "\" but does not define it");
  }
  const Json& entry = (*specials)[name];
  if (!entry.contains("ids") || !entry["ids"].is_array()) {
    return data_loss("post_processor special token \"", name, "\" has no ids");
  }
  std::vector<int32_t> ids;
  for (const Json& id : entry["ids"]) {
    ZL_ASSIGN_OR_RETURN(int32_t value, parse_id(id, "post_processor special token \"" + name + "\""));
    ids.push_back(value);
  }
  return ids;
}

}  // namespace

Status parse_hf_post_processor(const Json& obj, HfTokenizerSpec* spec, bool* decided) {
  if (obj.is_null()) return ok_status();
  *decided = true;
  const std::string type = obj.is_object() ? optional_string(obj, "type") : "";
  if (type == "ByteLevel") return ok_status();  // only trims offsets
  if (type == "Sequence") {
    const auto it = obj.find("processors");
    if (it == obj.end() || !it->is_array()) return data_loss("post_processor Sequence has no \"processors\"");
    for (const Json& child : *it) ZL_RETURN_IF_ERROR(parse_hf_post_processor(child, spec, decided));
    return ok_status();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    const auto token_id = [&](const char* key) -> StatusOr<int32_t> {
      const auto it = obj.find(key);
      if (it == obj.end() || !it->is_array() || it->size() != 2) {
        return data_loss("post_processor ", type, " has no [token, id] \"", key, "\"");
      }
      return parse_id((*it)[1], str_cat("post_processor ", type, " ", key));
    };
    ZL_ASSIGN_OR_RETURN(int32_t cls, token_id("cls"));
    ZL_ASSIGN_OR_RETURN(int32_t sep, token_id("sep"));
    spec->prefix_ids.push_back(cls);
    spec->suffix_ids.insert(spec->suffix_ids.begin(), sep);
    return ok_status();
  }
  if (type != "TemplateProcessing") return unimplemented("post_processor \"", type, "\" is not supported");
  const auto single = obj.find("single");
  if (single == obj.end() || !single->is_array()) return data_loss("post_processor TemplateProcessing has no \"single\"");
  std::vector<int32_t> prefix, suffix;
  bool seen_sequence = false;
  for (const Json& item : *single) {
    if (item.is_object() && item.contains("Sequence")) {
      seen_sequence = true;
    } else if (item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].is_object()) {
      const std::string name = optional_string(item["SpecialToken"], "id");
      ZL_ASSIGN_OR_RETURN(auto ids, template_special_ids(obj, name));
      auto& target = seen_sequence ? suffix : prefix;
      target.insert(target.end(), ids.begin(), ids.end());
    } else {
      return data_loss("post_processor TemplateProcessing has an item that is neither Sequence nor SpecialToken");
    }
  }
  spec->prefix_ids.insert(spec->prefix_ids.end(), prefix.begin(), prefix.end());
  spec->suffix_ids.insert(spec->suffix_ids.begin(), suffix.begin(), suffix.end());
  return ok_status();
}

void resolve_hf_special_ids(const std::string& config_dir, bool post_processor_decided, HfTokenizerSpec* spec,
                            Status* config_status) {
  Json config = Json::object();
  for (const char* name : {"special_tokens_map.json", "tokenizer_config.json"}) {  // the latter wins
    if (config_dir.empty()) break;
    const std::string path = (std::filesystem::path(config_dir) / name).string();
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    std::stringstream buffer;
    buffer << in.rdbuf();
    Json json = Json::parse(buffer.str(), nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
      *config_status = data_loss(path, " is not a valid JSON object");
      return;
    }
    for (const auto& [key, value] : json.items()) config[key] = value;
  }
  const auto lookup = [&](const std::string& content) -> int32_t {
    if (content.empty()) return -1;
    for (const AddedToken& token : spec->added_tokens) {
      if (token.content == content) return token.id;
    }
    return spec->model->token_to_id(content);
  };
  const auto first_known = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      bool special = false;
      for (const AddedToken& token : spec->added_tokens) special |= token.content == name && token.special;
      if (special) return lookup(name);
    }
    return -1;
  };
  SpecialTokenIds& ids = spec->special;
  ids.bos = lookup(config_token(config, "bos_token"));
  ids.eos = lookup(config_token(config, "eos_token"));
  ids.unk = lookup(config_token(config, "unk_token"));
  ids.pad = lookup(config_token(config, "pad_token"));
  if (ids.bos < 0 && spec->prefix_ids.size() == 1) ids.bos = spec->prefix_ids[0];
  if (ids.bos < 0 && !config.contains("bos_token")) ids.bos = first_known({"<s>", "<|begin_of_text|>", "<bos>"});
  if (ids.eos < 0 && !config.contains("eos_token")) {
    ids.eos = first_known({"</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>", "<|im_end|>"});
  }
  if (!post_processor_decided) {
    // Without a post_processor `tokenizers` adds nothing; transformers reads
    // add_bos_token / add_eos_token from tokenizer_config.json instead.
    const auto flag = [&](const char* key) { return config.contains(key) && config[key].is_boolean() && config[key].get<bool>(); };
    if (flag("add_bos_token") && ids.bos >= 0) spec->prefix_ids = {ids.bos};
    if (flag("add_eos_token") && ids.eos >= 0) spec->suffix_ids = {ids.eos};
  }
  ids.add_bos = !spec->prefix_ids.empty();
  ids.add_eos = !spec->suffix_ids.empty();
}

}  // namespace zl
