// zerolayer generate: one prompt, streamed to stdout, then a summary line on
// stderr (prompt tokens, generated tokens, time to first token, tokens/s).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "engine/generate.h"

namespace zl::cli {
namespace {

struct GenerateFlags {
  ModelFlags model;
  std::string prompt;
  std::string prompt_file;
  int max_new_tokens = 128;
  float temperature = 1.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool no_special = false;
};

StatusOr<std::string> read_prompt(const GenerateFlags& f) {
  if (!f.prompt_file.empty()) {
    std::ifstream in(f.prompt_file, std::ios::binary);
    if (!in) return not_found("--prompt-file ", f.prompt_file, ": cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  return f.prompt;
}

int run_generate(const GenerateFlags& f) {
  StatusOr<std::string> prompt_text = read_prompt(f);
  if (!prompt_text.ok()) return report_error(prompt_text.status());
  SamplingParams sampling;
  sampling.temperature = f.temperature;
  sampling.top_k = f.top_k;
  sampling.top_p = f.top_p;
  sampling.min_p = f.min_p;
  sampling.repetition_penalty = f.repetition_penalty;
  sampling.presence_penalty = f.presence_penalty;
  sampling.frequency_penalty = f.frequency_penalty;
  sampling.has_seed = f.seed >= 0;
  sampling.seed = static_cast<uint64_t>(f.seed);
  // Sampling values are checked before the (possibly slow) load.
  if (Status s = validate_sampling(sampling, std::numeric_limits<int32_t>::max()); !s.ok()) return report_error(s);
  if (f.max_new_tokens < 0) return report_error(invalid_argument("--max-new-tokens must be >= 0"));

  auto loaded = load_for_inference(f.model, 512);
  if (!loaded.ok()) return report_error(loaded.status());
  LoadedModel& lm = **loaded;
  const Tokenizer& tokenizer = *lm.source.tokenizer;
  std::vector<int32_t> prompt = tokenizer.encode(*prompt_text, !f.no_special, !f.no_special);

  GenerateOptions options;
  options.max_new_tokens = f.max_new_tokens;
  options.stop = f.stop;
  options.ignore_eos = f.ignore_eos;
  options.sampling = sampling;
  options.eos_ids = lm.source.config.eos_token_ids;
  if (tokenizer.special_ids().eos >= 0) options.eos_ids.push_back(tokenizer.special_ids().eos);

  const ModelConfig& config = lm.source.config;
  int64_t needed = std::min<int64_t>(config.max_seq_len, int64_t{static_cast<int64_t>(prompt.size())} + f.max_new_tokens);
  constexpr int32_t kBlockSize = 16;
  auto cache = KvCache::create(config, static_cast<int32_t>(std::max<int64_t>(1, (needed + kBlockSize - 1) / kBlockSize)), kBlockSize);
  if (!cache.ok()) return report_error(cache.status());

  std::fwrite(prompt_text->data(), 1, prompt_text->size(), stdout);
  std::fflush(stdout);
  auto result = generate(*lm.model, **cache, tokenizer, prompt, options, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  if (!result.ok()) return report_error(result.status());
  const GenerateResult& r = *result;
  double decode_s = r.total_s - r.time_to_first_token_s;
  size_t decoded = r.output_ids.size() > 0 ? r.output_ids.size() - 1 : 0;
  std::fprintf(stderr,
               "prompt tokens: %d, generated tokens: %zu, time to first token: %.1f ms, "
               "decode: %.2f tokens/s, finish: %s\n",
               r.num_prompt_tokens, r.output_ids.size(), r.time_to_first_token_s * 1e3,
               decode_s > 0 ? decoded / decode_s : 0.0, finish_reason_name(r.finish));
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text for one prompt and stream it to stdout");
  add_model_flags(*cmd, f->model);
  auto* prompt = cmd->add_option("-p,--prompt", f->prompt, "The prompt text");
  auto* prompt_file = cmd->add_option("-f,--prompt-file", f->prompt_file, "Read the prompt from a file");
  prompt->excludes(prompt_file);
  cmd->add_option("-n,--max-new-tokens", f->max_new_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--temperature", f->temperature, "0 for greedy; otherwise (0, 100]")->capture_default_str();
  cmd->add_option("--top-k", f->top_k, "Keep the k most likely tokens (0: off)")->capture_default_str();
  cmd->add_option("--top-p", f->top_p, "Nucleus sampling mass in (0, 1]")->capture_default_str();
  cmd->add_option("--min-p", f->min_p, "Drop tokens below min-p x the top probability")->capture_default_str();
  cmd->add_option("--repetition-penalty", f->repetition_penalty, "HF-style, on prompt and output (1: off)")->capture_default_str();
  cmd->add_option("--presence-penalty", f->presence_penalty, "OpenAI-style, in [-2, 2]")->capture_default_str();
  cmd->add_option("--frequency-penalty", f->frequency_penalty, "OpenAI-style, in [-2, 2]")->capture_default_str();
  cmd->add_option("-s,--seed", f->seed, "Sampling seed (default: random)");
  cmd->add_option("--stop", f->stop, "Stop string (repeatable); not included in the output");
  cmd->add_flag("--ignore-eos", f->ignore_eos, "Keep generating past end-of-sequence tokens");
  cmd->add_flag("--no-special", f->no_special, "Add no bos/eos and treat special-token text as plain text");
  return [f] { return run_generate(*f); };
}

}  // namespace zl::cli
