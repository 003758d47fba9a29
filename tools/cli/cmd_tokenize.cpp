// zerolayer tokenize: text (from --text or stdin) to a JSON array of ids, or
// with --decode a JSON array of ids back to text, as llama.cpp's
// llama-tokenize does. Works from a model or from a tokenizer alone.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"

namespace zl::cli {
namespace {

struct TokenizeFlags {
  ModelFlags model;
  std::string text;
  bool has_text = false;
  bool decode = false;
  bool no_special = false;
  bool keep_special = false;
};

StatusOr<std::unique_ptr<Tokenizer>> open_tokenizer(const ModelFlags& flags) {
  if (flags.model.empty()) {
    if (flags.tokenizer.empty()) return invalid_argument("give --model or --tokenizer");
    return load_tokenizer(flags.tokenizer);
  }
  LoadOptions options;
  options.tokenizer_path = flags.tokenizer;
  ZL_ASSIGN_OR_RETURN(ModelSource source, open_model(flags.model, options));
  if (!source.tokenizer) return source.tokenizer_status;
  return std::move(source.tokenizer);
}

StatusOr<std::vector<int32_t>> parse_ids(const std::string& text, int32_t vocab_size) {
  nlohmann::json array = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!array.is_array()) return invalid_argument("--decode expects a JSON array of token ids, e.g. [1, 2, 3]");
  std::vector<int32_t> ids;
  for (const auto& v : array) {
    if (!v.is_number_integer()) return invalid_argument("--decode: every element must be an integer token id");
    int64_t id = v.get<int64_t>();
    if (id < 0 || id >= vocab_size)
      return out_of_range("--decode: token id ", id, " is out of range [0, ", vocab_size, ")");
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

int run_tokenize(const TokenizeFlags& f) {
  auto tokenizer = open_tokenizer(f.model);
  if (!tokenizer.ok()) return report_error(tokenizer.status());
  std::string input = f.text;
  if (!f.has_text) input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  if (f.decode) {
    auto ids = parse_ids(input, (*tokenizer)->vocab_size());
    if (!ids.ok()) return report_error(ids.status());
    std::string text = (*tokenizer)->decode(*ids, !f.keep_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return 0;
  }
  std::vector<int32_t> ids = (*tokenizer)->encode(input, !f.no_special, !f.no_special);
  std::printf("%s\n", nlohmann::json(ids).dump().c_str());
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text as JSON (or decode ids with --decode)");
  add_model_flags(*cmd, f->model, /*model_required=*/false);
  cmd->add_option("--text", f->text, "The text (default: read stdin)")->each([f](const std::string&) { f->has_text = true; });
  cmd->add_flag("--decode", f->decode, "Read a JSON array of ids and print the text");
  cmd->add_flag("--no-special", f->no_special, "Add no bos/eos and treat special-token text as plain text");
  cmd->add_flag("--keep-special", f->keep_special, "With --decode: print special tokens instead of skipping them");
  return [f] { return run_tokenize(*f); };
}

}  // namespace zl::cli
