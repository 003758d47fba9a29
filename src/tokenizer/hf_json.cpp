// load_hf_tokenizer_json: parses a Hugging Face tokenizer.json (and, for bos /
// eos, tokenizer_config.json / special_tokens_map.json) into an
// HfTokenizerSpec. The file is untrusted: every problem becomes a Status that
// names the file and the field; nlohmann exceptions never escape.
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/hf_tokenizer_impl.h"

namespace zl {
namespace {

using Json = nlohmann::json;

StatusOr<Json> read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open ", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  Json json = Json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return data_loss(path, " is not valid JSON");
  return json;
}

bool get_bool(const Json& obj, const char* key, bool fallback) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string get_string(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// {"String": "x"} or {"Regex": "x"} -> a compiled regex.
StatusOr<std::shared_ptr<const Regex>> parse_pattern(const Json& obj, const std::string& where) {
  const auto it = obj.find("pattern");
  if (it == obj.end() || !it->is_object()) return data_loss(where, " has no \"pattern\" object");
  if (it->contains("String") && (*it)["String"].is_string()) {
    return Regex::compile(Regex::escape((*it)["String"].get<std::string>()));
  }
  if (it->contains("Regex") && (*it)["Regex"].is_string()) {
    auto regex = Regex::compile((*it)["Regex"].get<std::string>());
    if (!regex.ok()) return regex.status().with_prefix(where);
    return regex;
  }
  return data_loss(where, " has a pattern that is neither String nor Regex");
}

StatusOr<SplitBehavior> parse_behavior(const Json& obj, SplitBehavior fallback, const std::string& where) {
  const std::string name = get_string(obj, "behavior");
  if (name.empty()) return fallback;
  static const std::unordered_map<std::string, SplitBehavior> kNames = {
      {"Removed", SplitBehavior::kRemoved}, {"Isolated", SplitBehavior::kIsolated},
      {"MergedWithPrevious", SplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", SplitBehavior::kMergedWithNext}, {"Contiguous", SplitBehavior::kContiguous}};
  const auto it = kNames.find(name);
  if (it == kNames.end()) return data_loss(where, " has an unknown behavior \"", name, "\"");
  return it->second;
}

Status parse_normalizer(const Json& obj, std::vector<NormalizerStep>* steps) {
  if (obj.is_null()) return ok_status();
  const std::string type = obj.is_object() ? get_string(obj, "type") : "";
  const std::string where = "normalizer " + type;
  if (type == "Sequence") {
    const auto it = obj.find("normalizers");
    if (it == obj.end() || !it->is_array()) return data_loss("normalizer Sequence has no \"normalizers\" list");
    for (const Json& child : *it) ZL_RETURN_IF_ERROR(parse_normalizer(child, steps));
    return ok_status();
  }
  NormalizerStep step;
  if (type == "NFC") {
    step.kind = NormalizerStep::Kind::kNfc;
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    step.text = get_string(obj, "prepend");
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    ZL_ASSIGN_OR_RETURN(step.regex, parse_pattern(obj, where));
    step.text = get_string(obj, "content");
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.strip_left = get_bool(obj, "strip_left", true);
    step.strip_right = get_bool(obj, "strip_right", true);
  } else {
    return unimplemented("normalizer \"", type, "\" is not supported");
  }
  steps->push_back(std::move(step));
  return ok_status();
}

Status add_split(const std::string& pattern, SplitBehavior behavior, bool invert,
                 std::vector<PreTokenizerStep>* steps) {
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kSplit;
  ZL_ASSIGN_OR_RETURN(step.regex, Regex::compile(pattern));
  step.behavior = behavior;
  step.invert = invert;
  steps->push_back(std::move(step));
  return ok_status();
}

StatusOr<PreTokenizerStep::Prepend> parse_prepend_scheme(const Json& obj) {
  const std::string scheme = get_string(obj, "prepend_scheme");
  if (scheme.empty()) {  // older files: add_prefix_space
    return get_bool(obj, "add_prefix_space", true) ? PreTokenizerStep::Prepend::kAlways
                                                   : PreTokenizerStep::Prepend::kNever;
  }
  if (scheme == "always") return PreTokenizerStep::Prepend::kAlways;
  if (scheme == "first") return PreTokenizerStep::Prepend::kFirst;
  if (scheme == "never") return PreTokenizerStep::Prepend::kNever;
  return data_loss("Metaspace has an unknown prepend_scheme \"", scheme, "\"");
}

Status parse_pre_tokenizer(const Json& obj, std::vector<PreTokenizerStep>* steps) {
  if (obj.is_null()) return ok_status();
  const std::string type = obj.is_object() ? get_string(obj, "type") : "";
  const std::string where = "pre_tokenizer " + type;
  if (type == "Sequence") {
    const auto it = obj.find("pretokenizers");
    if (it == obj.end() || !it->is_array()) return data_loss("pre_tokenizer Sequence has no \"pretokenizers\" list");
    for (const Json& child : *it) ZL_RETURN_IF_ERROR(parse_pre_tokenizer(child, steps));
    return ok_status();
  }
  if (type == "ByteLevel") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    step.add_prefix_space = get_bool(obj, "add_prefix_space", true);
    if (get_bool(obj, "use_regex", true)) {
      ZL_ASSIGN_OR_RETURN(step.regex, Regex::compile(kGpt2SplitRegex));
    }
    steps->push_back(std::move(step));
    return ok_status();
  }
  if (type == "Split") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kSplit;
    ZL_ASSIGN_OR_RETURN(step.regex, parse_pattern(obj, where));
    ZL_ASSIGN_OR_RETURN(step.behavior, parse_behavior(obj, SplitBehavior::kIsolated, where));
    step.invert = get_bool(obj, "invert", false);
    steps->push_back(std::move(step));
    return ok_status();
  }
  if (type == "Digits") {  // char::is_numeric, one match per character
    const bool individual = get_bool(obj, "individual_digits", false);
    return add_split(R"(\p{N})", individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false, steps);
  }
  if (type == "Punctuation") {  // char::is_ascii_punctuation || Unicode P*
    ZL_ASSIGN_OR_RETURN(auto behavior, parse_behavior(obj, SplitBehavior::kIsolated, where));
    return add_split(R"([\p{P}!-/:-@\[-`{-~])", behavior, false, steps);
  }
  if (type == "Whitespace") return add_split(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, true, steps);
  if (type == "WhitespaceSplit") return add_split(R"(\s+)", SplitBehavior::kRemoved, false, steps);
  if (type == "Metaspace") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    step.replacement = get_string(obj, "replacement");
    if (step.replacement.empty()) return data_loss("pre_tokenizer Metaspace has no replacement");
    ZL_ASSIGN_OR_RETURN(step.prepend, parse_prepend_scheme(obj));
    step.split = get_bool(obj, "split", true);
    steps->push_back(std::move(step));
    return ok_status();
  }
  return unimplemented("pre_tokenizer \"", type, "\" is not supported");
}

Status parse_decoder(const Json& obj, std::vector<DecoderStep>* steps) {
  const std::string type = obj.is_object() ? get_string(obj, "type") : "";
  if (type == "Sequence") {
    const auto it = obj.find("decoders");
    if (it == obj.end() || !it->is_array()) return data_loss("decoder Sequence has no \"decoders\" list");
    for (const Json& child : *it) ZL_RETURN_IF_ERROR(parse_decoder(child, steps));
    return ok_status();
  }
  DecoderStep step;
  if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    const auto it = obj.find("pattern");
    if (it == obj.end() || !it->is_object() || !it->contains("String") || !(*it)["String"].is_string()) {
      return unimplemented("decoder Replace supports only String patterns");
    }
    step.from = (*it)["String"].get<std::string>();
    step.to = get_string(obj, "content");
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    step.strip_char = get_string(obj, "content");
    const auto count = [&](const char* key) {
      const auto it = obj.find(key);
      return it != obj.end() && it->is_number_unsigned() ? it->get<size_t>() : size_t{0};
    };
    step.start = count("start");
    step.stop = count("stop");
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    step.from = get_string(obj, "replacement");
    ZL_ASSIGN_OR_RETURN(auto scheme, parse_prepend_scheme(obj));
    step.prepend = scheme != PreTokenizerStep::Prepend::kNever;
  } else {
    return unimplemented("decoder \"", type, "\" is not supported");
  }
  steps->push_back(std::move(step));
  return ok_status();
}

}  // namespace

// Declared in hf_json_model.cpp.
Status parse_hf_model(const Json& model, HfTokenizerSpec* spec);
Status parse_hf_added_tokens(const Json& root, HfTokenizerSpec* spec);
Status parse_hf_post_processor(const Json& obj, HfTokenizerSpec* spec, bool* decided);
void resolve_hf_special_ids(const std::string& config_dir, bool post_processor_decided, HfTokenizerSpec* spec,
                            Status* config_status);

StatusOr<std::unique_ptr<Tokenizer>> load_hf_tokenizer_json(const std::string& json_path,
                                                            const std::string& config_dir) {
  try {
    ZL_ASSIGN_OR_RETURN(Json root, read_json(json_path));
    const auto fail = [&](const Status& s) { return s.with_prefix(json_path); };
    if (!root.is_object()) return data_loss(json_path, ": the top level is not an object");
    if (!root.contains("model") || !root["model"].is_object()) return data_loss(json_path, ": no \"model\" object");
    HfTokenizerSpec spec;
    Status s = parse_hf_model(root["model"], &spec);
    if (s.ok()) s = parse_hf_added_tokens(root, &spec);
    if (s.ok() && root.contains("normalizer")) s = parse_normalizer(root["normalizer"], &spec.normalizers);
    if (s.ok() && root.contains("pre_tokenizer")) s = parse_pre_tokenizer(root["pre_tokenizer"], &spec.pre_tokenizers);
    spec.has_decoder = root.contains("decoder") && !root["decoder"].is_null();
    if (s.ok() && spec.has_decoder) s = parse_decoder(root["decoder"], &spec.decoders);
    bool decided = false;
    if (s.ok() && root.contains("post_processor")) s = parse_hf_post_processor(root["post_processor"], &spec, &decided);
    if (!s.ok()) return fail(s);
    bool byte_level = false;
    for (const auto& step : spec.decoders) byte_level |= step.kind == DecoderStep::Kind::kByteLevel;
    spec.description = byte_level ? "tokenizer.json byte-level BPE" : "tokenizer.json BPE (SentencePiece-style)";
    Status config_status;
    resolve_hf_special_ids(config_dir, decided, &spec, &config_status);
    if (!config_status.ok()) return config_status;
    return make_hf_tokenizer(std::move(spec));
  } catch (const std::exception& e) {
    return data_loss(json_path, ": ", e.what());
  }
}

}  // namespace zl
