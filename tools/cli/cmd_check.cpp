// zerolayer check: a dry run. Reads the model's metadata, tensor index and
// tokenizer without converting or computing anything, checks they agree, and
// prints a summary; exits 1 naming every mismatch.
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "commands.h"
#include "common.h"

namespace zl::cli {
namespace {

std::vector<std::string> find_mismatches(const ModelSource& s) {
  std::vector<std::string> problems;
  const ModelConfig& c = s.config;
  if (!s.tokenizer) {
    problems.push_back("tokenizer: " + s.tokenizer_status.message());
    return problems;
  }
  const Tokenizer& t = *s.tokenizer;
  // The embedding may have padding rows beyond the tokenizer, never fewer rows.
  if (t.vocab_size() > c.vocab_size)
    problems.push_back(str_cat("vocab size: the tokenizer has ", t.vocab_size(), " tokens but the model's embedding has ",
                               c.vocab_size, " rows"));
  const SpecialTokenIds& sp = t.special_ids();
  auto check_id = [&](const char* what, int32_t id) {
    if (id >= c.vocab_size || id >= t.vocab_size())
      problems.push_back(str_cat(what, " id ", id, " is outside the vocabulary"));
  };
  check_id("tokenizer bos", sp.bos);
  check_id("tokenizer eos", sp.eos);
  check_id("model bos", c.bos_token_id);
  for (int32_t id : c.eos_token_ids) check_id("model eos", id);
  if (sp.eos < 0 && c.eos_token_ids.empty()) problems.push_back("eos: neither the model nor the tokenizer names an eos token");
  if (sp.add_bos && sp.bos < 0) problems.push_back("bos: the tokenizer adds bos but has no bos token");
  return problems;
}

void print_summary(const ModelSource& s) {
  const ModelConfig& c = s.config;
  std::printf("model:        %s (%s)\n", s.spec.c_str(), model_format_name(s.format));
  if (!s.path.empty() && s.path != s.spec) std::printf("files:        %s\n", s.path.c_str());
  std::printf("architecture: %s (%s)\n", c.arch.c_str(), c.source_arch.c_str());
  std::printf("parameters:   %.2fM in %zu tensors\n", config_num_params(c) / 1e6, s.tensors.size());
  std::map<std::string, int> types;
  for (const auto& [name, info] : s.tensors) ++types[dtype_name(info.dtype)];
  if (!types.empty()) {
    std::printf("tensor types:");
    for (const auto& [type, count] : types) std::printf(" %s x %d", type.c_str(), count);
    std::printf("\n");
  }
  std::string recipe;
  for (const std::string& feature : recipe_features(c)) recipe += " " + feature;
  if (c.sliding_window > 0 && !c.layer_sliding.empty()) recipe += str_cat(" (window ", c.sliding_window, ")");
  std::printf("recipe:       %s\n", recipe.empty() ? " llama" : recipe.c_str());
  std::printf("shape:        dim %d, layers %d, heads %d, kv heads %d, head dim %d, hidden %d, vocab %d\n", c.dim,
              c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.hidden_dim, c.vocab_size);
  std::printf("context:      %d tokens, rope theta %g%s\n", c.max_seq_len, c.rope_theta,
              c.rope_scaling.type == RopeScalingType::kNone ? "" : ", scaled");
  std::printf("model eos:   ");
  for (int32_t id : c.eos_token_ids) std::printf(" %d", id);
  std::printf("\n");
  if (s.tokenizer) {
    const SpecialTokenIds& sp = s.tokenizer->special_ids();
    std::printf("tokenizer:    %s from %s, %d tokens, bos %d, eos %d, add_bos %s\n", s.tokenizer->describe().c_str(),
                s.tokenizer_source.c_str(), s.tokenizer->vocab_size(), sp.bos, sp.eos, sp.add_bos ? "yes" : "no");
  }
}

}  // namespace

Command add_check_command(CLI::App& app) {
  auto flags = std::make_shared<ModelFlags>();
  CLI::App* cmd = app.add_subcommand("check", "Dry run: check that model, tokenizer and configuration agree");
  add_model_flags(*cmd, *flags);
  return [flags] {
    LoadOptions options;
    options.tokenizer_path = flags->tokenizer;
    auto source = open_model(flags->model, options);
    if (!source.ok()) return report_error(source.status());
    print_summary(*source);
    std::vector<std::string> problems = find_mismatches(*source);
    for (const std::string& p : problems) std::fprintf(stderr, "mismatch: %s\n", p.c_str());
    if (!problems.empty()) return 1;
    std::printf("check: ok\n");
    return 0;
  };
}

}  // namespace zl::cli
