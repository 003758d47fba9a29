// What the subcommands share: the model flags, a load progress bar, and
// printing errors. Every flag can also come from the
// environment as ZEROLAYER_<FLAG> (e.g. ZEROLAYER_MODEL).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "bundle/model_loader.h"
#include "zerolayer/engine.h"
#include "zerolayer/status.h"

namespace zl::cli {

struct ModelFlags {
  std::string model;
  std::string tokenizer;
  int threads = 0;          // 0: one per core
  std::string device = "cpu";  // cpu, cuda or cuda:N
  bool batch_invariant = false;
  int max_seq_len = 0;      // 0: the model's own
  // Weight conversion at load.
  std::string dtype = "auto";          // weight matrices: auto (as stored), f32, f16, bf16
  std::string quantization = "none";   // none, int8, q8_0, q4_0
  std::string kv_cache_dtype = "auto";  // auto (16 bits), f32, f16, bf16, fp8, q8_0
};

void add_model_flags(CLI::App& app, ModelFlags& flags, bool model_required = true);

// --dtype / --quantization as a WeightFormat.
StatusOr<WeightFormat> weight_format_from_flags(const ModelFlags& flags);
// An engine configuration with the model flags filled in (and a load progress bar).
StatusOr<EngineConfig> engine_config_from_flags(const ModelFlags& flags);

// A progress bar for model loading on a terminal; log lines otherwise.
void show_load_progress(int done, int total);

// Prints "error: <message>" to stderr and returns the exit code for it.
int report_error(const Status& status);

}  // namespace zl::cli
