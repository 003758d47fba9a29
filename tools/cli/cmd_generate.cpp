// zerolayer generate: one prompt through the engine, streamed to stdout,
// then a summary line on stderr (prompt tokens, generated tokens, time to
// first token, tokens/s).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "chat_prompt.h"
#include "commands.h"
#include "common.h"
#include "engine/inbox.h"
#include "zerolayer/engine.h"

namespace zl::cli {
namespace {

struct GenerateFlags {
  ModelFlags model;
  std::string prompt;
  std::string prompt_file;
  int max_new_tokens = 128;
  SamplingParams sampling;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool chat = false;          // the prompt is one user message through the chat template
  std::string chat_template;  // --chat-template FILE|chatml (implies --chat)
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

// Writes text to stdout as it arrives (on the engine thread) and wakes the
// main thread at the end.
class StdoutSink : public EventSink {
 public:
  void on_token(const TokenEvent& event) override { write(event.text); }
  void on_finish(const FinishEvent& event) override {
    write(event.remaining_text);
    finish = event;
    done.store(1, std::memory_order_release);
    futex_wake_all(&done);
  }
  void wait() {
    while (done.load(std::memory_order_acquire) == 0) futex_wait(&done, 0);
  }
  FinishEvent finish;
  std::atomic<uint32_t> done{0};

 private:
  static void write(const std::string& text) {
    if (text.empty()) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
};

int run_generate(GenerateFlags& f) {
  StatusOr<std::string> prompt_text = read_prompt(f);
  if (!prompt_text.ok()) return report_error(prompt_text.status());
  f.sampling.has_seed = f.seed >= 0;
  f.sampling.seed = static_cast<uint64_t>(f.seed);
  // Values are checked before the (possibly slow) load.
  if (Status s = validate_sampling(f.sampling, std::numeric_limits<int32_t>::max()); !s.ok()) return report_error(s);
  if (f.max_new_tokens < 1) return report_error(invalid_argument("--max-new-tokens must be at least 1"));
  std::vector<int32_t> chat_ids, stop_token_ids;
  if (f.chat || !f.chat_template.empty()) {
    auto chat = build_chat_prompt(f.model, *prompt_text, f.chat_template, f.ignore_eos, stop_token_ids);
    if (!chat.ok()) return report_error(chat.status());
    *prompt_text = chat->text;
    chat_ids = std::move(chat->ids);
  }

  auto config = engine_config_from_flags(f.model);
  if (!config.ok()) return report_error(config.status());
  config->max_num_seqs = 1;
  config->max_num_batched_tokens = 512;
  auto engine = Engine::create(*config);
  if (!engine.ok()) return report_error(engine.status());

  auto sink = std::make_shared<StdoutSink>();
  Request request;
  request.prompt_text = *prompt_text;
  request.prompt_ids = std::move(chat_ids);
  request.sampling = f.sampling;
  request.max_new_tokens = f.max_new_tokens;
  request.stop = f.stop;
  request.ignore_eos = f.ignore_eos;
  request.stop_token_ids = std::move(stop_token_ids);
  request.sink = sink;
  std::fwrite(prompt_text->data(), 1, prompt_text->size(), stdout);
  std::fflush(stdout);
  auto id = (*engine)->submit(std::move(request));
  if (!id.ok()) {
    std::fputc('\n', stdout);
    return report_error(id.status());
  }
  sink->wait();
  std::fputc('\n', stdout);
  const FinishEvent& r = sink->finish;
  if (r.reason == FinishReason::kError) return report_error(internal_error(r.stop_detail));
  double decode_s = r.timings.finish_s - r.timings.first_token_s;
  int decoded = std::max(0, r.num_generated_tokens - 1);
  std::fprintf(stderr,
               "prompt tokens: %d, generated tokens: %d, time to first token: %.1f ms, "
               "decode: %.2f tokens/s, finish: %s\n",
               r.num_prompt_tokens, r.num_generated_tokens, r.timings.first_token_s * 1e3,
               decode_s > 0 ? decoded / decode_s : 0.0, finish_reason_name(r.reason));
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
  SamplingParams& s = f->sampling;
  cmd->add_option("-n,--max-new-tokens", f->max_new_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--temperature", s.temperature, "0 for greedy; otherwise (0, 100]")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "Keep the k most likely tokens (0: off)")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "Nucleus sampling mass in (0, 1]")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "Drop tokens below min-p x the top probability")->capture_default_str();
  cmd->add_option("--repetition-penalty", s.repetition_penalty, "HF-style, on prompt and output (1: off)")->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty, "OpenAI-style, in [-2, 2]")->capture_default_str();
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "OpenAI-style, in [-2, 2]")->capture_default_str();
  cmd->add_option("-s,--seed", f->seed, "Sampling seed (default: random)");
  cmd->add_option("--stop", f->stop, "Stop string (repeatable); not included in the output");
  cmd->add_flag("--ignore-eos", f->ignore_eos, "Keep generating past end-of-sequence tokens");
  cmd->add_flag("--chat", f->chat, "Send the prompt as one user message through the model's chat template");
  cmd->add_option("--chat-template", f->chat_template, "A Jinja chat template file, or 'chatml' (implies --chat)");
  return [f] { return run_generate(*f); };
}

}  // namespace zl::cli
