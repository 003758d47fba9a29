// load_tokenizer and make_tokenizer_from_vocab: pick the implementation from
// the file name or GGUF model name. The formats themselves live in
// hf_tokenizer (tokenizer.json, GGUF gpt2), spm_tokenizer (tokenizer.model)
// and gguf_spm_tokenizer (GGUF llama).
#include <filesystem>
#include <fstream>
#include <system_error>

#include "tokenizer/gguf_spm_tokenizer.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_check.h"

namespace zl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kJsonName = "tokenizer.json";
constexpr const char* kModelName = "tokenizer.model";

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// A file that is neither *.json nor *.model: JSON starts with '{' (after
// whitespace); anything else is taken for a SentencePiece protobuf.
bool looks_like_json(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char c;
  while (in.get(c)) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  }
  return false;
}

StatusOr<std::unique_ptr<Tokenizer>> load_from_dir(const fs::path& dir) {
  const fs::path json = dir / kJsonName;
  const fs::path model = dir / kModelName;
  const bool has_model = is_file(model);
  if (is_file(json)) {
    auto tok = load_hf_tokenizer_json(json.string(), dir.string());
    // A tokenizer.json we cannot handle (e.g. an unsupported model type) is
    // not fatal when the SentencePiece original sits beside it.
    if (tok.ok() || !has_model || tok.status().code() != StatusCode::kUnimplemented) return tok;
  }
  if (has_model) return load_spm_tokenizer(model.string(), dir.string());
  return not_found(dir.string(), ": directory holds neither ", kJsonName, " nor ", kModelName);
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return load_from_dir(p);
  if (!fs::exists(p, ec)) {
    return not_found(path, ": no such file or directory (expected a ", kJsonName, " or ",
                     kModelName, " file, or a directory holding one)");
  }
  if (!is_file(p)) return invalid_argument(path, ": not a regular file or directory");
  const std::string config_dir = p.has_parent_path() ? p.parent_path().string() : ".";
  const std::string ext = p.extension().string();
  const bool json = ext == ".json" || (ext != ".model" && looks_like_json(p));
  if (json) return load_hf_tokenizer_json(path, config_dir);
  return load_spm_tokenizer(path, config_dir);
}

StatusOr<std::unique_ptr<Tokenizer>> make_tokenizer_from_vocab(const VocabData& vocab) {
  ZL_RETURN_IF_ERROR(validate_vocab(vocab).with_prefix("GGUF tokenizer"));
  if (vocab.model == "llama") return make_spm_tokenizer_from_vocab(vocab);
  if (vocab.model == "gpt2") return make_bpe_tokenizer_from_vocab(vocab);
  return unimplemented("GGUF tokenizer model \"", vocab.model,
                       "\" is not supported (supported: \"llama\", \"gpt2\")");
}

int64_t longest_token_bytes(const Tokenizer& tokenizer) {
  int64_t longest = 0;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id)
    longest = std::max<int64_t>(longest, int64_t(tokenizer.decode(std::span<const int32_t>(&id, 1), false).size()));
  return longest;
}

}  // namespace zl
