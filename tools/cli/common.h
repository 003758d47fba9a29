// What the subcommands share: the model flags, loading a model with a
// progress bar, and printing errors. Every flag can also come from the
// environment as ZEROLAYER_<FLAG> (e.g. ZEROLAYER_MODEL).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/llama.h"
#include "model/model_loader.h"

namespace zl::cli {

struct ModelFlags {
  std::string model;
  std::string tokenizer;
  int threads = 0;          // 0: one per core
  int max_seq_len = 0;      // 0: the model's own
};

void add_model_flags(CLI::App& app, ModelFlags& flags, bool model_required = true);

// A model ready to run: metadata, weights, threads and the forward plan.
struct LoadedModel {
  ModelSource source;
  ModelWeights weights;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<LlamaModel> model;
};

StatusOr<std::unique_ptr<LoadedModel>> load_for_inference(const ModelFlags& flags, int32_t max_batch_tokens);

// Prints "error: <message>" to stderr and returns the exit code for it.
int report_error(const Status& status);

}  // namespace zl::cli
