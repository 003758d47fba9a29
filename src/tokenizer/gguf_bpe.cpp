// make_bpe_tokenizer_from_vocab: a GGUF "gpt2" vocabulary (tokens + merges)
// becomes the same pipeline a tokenizer.json of that family would describe.
// tokenizer.ggml.pre names the family; the pipelines below mirror the
// tokenizer.json files of those models (and llama.cpp's table of regexes).
#include <unordered_map>

#include "core/log.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/hf_tokenizer_impl.h"

namespace zl {
namespace {

StatusOr<PreTokenizerStep> split_step(const std::string& pattern, SplitBehavior behavior) {
  ZL_ASSIGN_OR_RETURN(auto regex, Regex::compile(pattern));
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kSplit;
  step.regex = std::move(regex);
  step.behavior = behavior;
  return step;
}

StatusOr<PreTokenizerStep> byte_level_step(bool use_regex) {
  PreTokenizerStep step;
  step.kind = PreTokenizerStep::Kind::kByteLevel;
  if (use_regex) {
    ZL_ASSIGN_OR_RETURN(step.regex, Regex::compile(kGpt2SplitRegex));
  }
  return step;
}

// Fills the pre-tokenizers (and normalizers / ignore_merges) for `pre`.
Status configure_pre(const std::string& pre, HfTokenizerSpec* spec, bool* ignore_merges) {
  auto& steps = spec->pre_tokenizers;
  const auto add = [&](StatusOr<PreTokenizerStep> step) -> Status {
    if (!step.ok()) return step.status();
    steps.push_back(std::move(*step));
    return ok_status();
  };
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "llama3.1" || pre == "llama3.2") {
    *ignore_merges = true;  // Llama-3's tokenizer.json sets ignore_merges
    ZL_RETURN_IF_ERROR(add(split_step(kLlama3SplitRegex, SplitBehavior::kIsolated)));
    return add(byte_level_step(false));
  }
  if (pre == "dbrx" || pre == "smaug-bpe") {
    ZL_RETURN_IF_ERROR(add(split_step(kLlama3SplitRegex, SplitBehavior::kIsolated)));
    return add(byte_level_step(false));
  }
  if (pre == "tekken" || pre == "gpt-4o" || pre == "llama4") {
    // llama.cpp's regexes for these (not covered by goldens here).
    const char* letters =
        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)";
    const char* upper =
        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)";
    const std::string suffix = pre == "tekken" ? "" : R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?)";
    const std::string digits = pre == "tekken" ? R"(\p{N})" : R"(\p{N}{1,3})";
    const std::string pattern = std::string(letters) + suffix + "|" + upper + suffix + "|" + digits +
                                R"(| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    ZL_RETURN_IF_ERROR(add(split_step(pattern, SplitBehavior::kIsolated)));
    return add(byte_level_step(false));
  }
  if (pre == "qwen2" || pre == "qwen" || pre == "deepseek-r1-qwen") {
    NormalizerStep nfc;
    nfc.kind = NormalizerStep::Kind::kNfc;
    spec->normalizers.push_back(nfc);  // Qwen2's tokenizer.json normalizes NFC
    ZL_RETURN_IF_ERROR(add(split_step(kQwen2SplitRegex, SplitBehavior::kIsolated)));
    return add(byte_level_step(false));
  }
  if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "codeshell") {
    ZL_RETURN_IF_ERROR(add(split_step(R"(\p{N})", SplitBehavior::kIsolated)));
    return add(byte_level_step(true));
  }
  if (pre == "falcon") {
    ZL_RETURN_IF_ERROR(add(split_step(R"([\p{P}!-/:-@\[-`{-~])", SplitBehavior::kContiguous)));
    ZL_RETURN_IF_ERROR(add(byte_level_step(true)));
    ZL_RETURN_IF_ERROR(add(split_step(R"(\p{N})", SplitBehavior::kContiguous)));
    return add(split_step("[0-9][0-9][0-9]", SplitBehavior::kIsolated));
  }
  if (pre != "gpt2" && pre != "gpt-2" && pre != "default" && !pre.empty()) {
    log_warn("tokenizer.ggml.pre \"", pre, "\" is not known; using the GPT-2 split regex");
  }
  return add(byte_level_step(true));
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> make_bpe_tokenizer_from_vocab(const VocabData& vocab) {
  if (vocab.model != "gpt2") {
    return invalid_argument("make_bpe_tokenizer_from_vocab needs tokenizer.ggml.model \"gpt2\", not \"",
                            vocab.model, "\"");
  }
  if (vocab.tokens.empty()) return data_loss("GGUF vocabulary has no tokens");
  if (!vocab.token_types.empty() && vocab.token_types.size() != vocab.tokens.size()) {
    return data_loss("GGUF vocabulary has ", vocab.tokens.size(), " tokens but ", vocab.token_types.size(),
                     " token types");
  }
  HfTokenizerSpec spec;
  spec.description = "GGUF byte-level BPE (pre \"" + vocab.pre + "\")";
  std::unordered_map<std::string, int32_t> token_to_id;
  token_to_id.reserve(vocab.tokens.size());
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    token_to_id[vocab.tokens[id]] = static_cast<int32_t>(id);
    const int32_t type = vocab.token_types.empty() ? 1 : vocab.token_types[id];
    if (type == static_cast<int32_t>(TokenType::kControl) ||
        type == static_cast<int32_t>(TokenType::kUserDefined)) {
      AddedToken token;
      token.content = vocab.tokens[id];
      token.id = static_cast<int32_t>(id);
      token.special = type == static_cast<int32_t>(TokenType::kControl);
      if (!token.content.empty()) spec.added_tokens.push_back(std::move(token));
    }
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(vocab.merges.size());
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    std::pair<std::string, std::string> pair;
    if (!split_merge(vocab.merges[rank], token_to_id, &pair)) {
      return data_loss("GGUF merge ", rank, " \"", vocab.merges[rank], "\" is not two vocab tokens");
    }
    merges.push_back(std::move(pair));
  }
  BpeOptions options;
  ZL_RETURN_IF_ERROR(configure_pre(vocab.pre, &spec, &options.ignore_merges));
  ZL_ASSIGN_OR_RETURN(spec.model, BpeModel::build(std::move(token_to_id), merges, options));
  spec.has_decoder = true;
  DecoderStep byte_level;
  byte_level.kind = DecoderStep::Kind::kByteLevel;
  spec.decoders.push_back(byte_level);

  const auto valid = [&](int32_t id) { return id >= 0 && static_cast<size_t>(id) < vocab.tokens.size() ? id : -1; };
  spec.special.bos = valid(vocab.bos_id);
  spec.special.eos = valid(vocab.eos_id);
  spec.special.unk = valid(vocab.unk_id);
  spec.special.pad = valid(vocab.pad_id);
  spec.special.add_bos = vocab.add_bos.value_or(false) && spec.special.bos >= 0;
  spec.special.add_eos = vocab.add_eos.value_or(false) && spec.special.eos >= 0;
  if (spec.special.add_bos) spec.prefix_ids.push_back(spec.special.bos);
  if (spec.special.add_eos) spec.suffix_ids.push_back(spec.special.eos);
  return make_hf_tokenizer(std::move(spec));
}

}  // namespace zl
