#include "common.h"

#include <unistd.h>

#include <cstdio>

#include "core/log.h"

namespace zl::cli {
namespace {

// A one-line bar on a terminal; a log line per 25% otherwise.
void show_progress(int done, int total) {
  if (isatty(STDERR_FILENO)) {
    constexpr int kWidth = 30;
    int filled = total > 0 ? done * kWidth / total : kWidth;
    std::fprintf(stderr, "\rloading [%.*s%*s] %d/%d tensors", filled, "##############################",
                 kWidth - filled, "", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  } else if (total > 0 && (done * 4 / total != (done - 1) * 4 / total)) {
    log_info("loaded ", done, "/", total, " tensors");
  }
}

}  // namespace

void add_model_flags(CLI::App& app, ModelFlags& flags, bool model_required) {
  auto* model = app.add_option("-m,--model", flags.model,
                               "A Hugging Face model directory, a .gguf file, or dummy:NAME[:SEED] "
                               "(dummy:tiny, dummy:llama-110m, dummy:llama-1b)")
                    ->envname("ZEROLAYER_MODEL");
  if (model_required) model->required();
  app.add_option("--tokenizer", flags.tokenizer,
                 "A tokenizer.json / tokenizer.model file or folder, instead of the model's own")
      ->envname("ZEROLAYER_TOKENIZER");
  app.add_option("-t,--threads", flags.threads, "Compute threads (default: one per core)")
      ->envname("ZEROLAYER_THREADS")
      ->check(CLI::Range(0, 1024));
  app.add_option("--max-seq-len", flags.max_seq_len,
                 "Context length in tokens (default: the model's; may only shrink it)")
      ->envname("ZEROLAYER_MAX_SEQ_LEN")
      ->check(CLI::Range(0, 1 << 24));
}

StatusOr<std::unique_ptr<LoadedModel>> load_for_inference(const ModelFlags& flags, int32_t max_batch_tokens) {
  auto loaded = std::make_unique<LoadedModel>();
  LoadOptions options;
  options.tokenizer_path = flags.tokenizer;
  ZL_ASSIGN_OR_RETURN(loaded->source, open_model(flags.model, options));
  ModelSource& source = loaded->source;
  if (!source.tokenizer) return source.tokenizer_status.with_prefix("no tokenizer for " + flags.model);
  if (flags.max_seq_len > 0) {
    if (flags.max_seq_len > source.config.max_seq_len)
      return invalid_argument("--max-seq-len ", flags.max_seq_len, " exceeds the model's context of ",
                              source.config.max_seq_len);
    source.config.max_seq_len = flags.max_seq_len;
  }
  log_info("model ", flags.model, ": ", model_format_name(source.format), ", ", arch_name(source.config.arch),
           ", ", config_num_params(source.config) / 1000000.0, "M parameters");
  ZL_ASSIGN_OR_RETURN(loaded->weights, load_model_weights(source, show_progress));
  int threads = flags.threads > 0 ? flags.threads : default_num_threads();
  loaded->pool = std::make_unique<ThreadPool>(threads);
  loaded->model = std::make_unique<LlamaModel>(source.config, loaded->weights, *loaded->pool, max_batch_tokens);
  return loaded;
}

int report_error(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

}  // namespace zl::cli
