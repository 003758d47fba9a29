#include "common.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/log.h"

namespace zl::cli {

void show_load_progress(int done, int total) {
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

void add_model_flags(CLI::App& app, ModelFlags& flags, bool model_required) {
  auto* model = app.add_option("-m,--model", flags.model,
                               "A Hugging Face model directory, a .gguf file, a Hugging Face id "
                               "ORG/NAME[@REVISION][:QUANT], or dummy:NAME[:SEED] (dummy:tiny, dummy:tiny-4k, dummy:llama-110m, "
                               "dummy:llama-1b, dummy:tiny-moe, dummy:moe-small). An id (not an existing path) is looked up in the Hugging Face cache "
                               "(HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub) and downloaded into "
                               "it when missing (HF_ENDPOINT, HF_TOKEN; HF_HUB_OFFLINE=1: never download); :QUANT "
                               "picks the repo's .gguf whose name has it (e.g. :Q4_K_M)")
                    ->envname("ZEROLAYER_MODEL");
  if (model_required) model->required();
  app.add_option("--tokenizer", flags.tokenizer,
                 "A tokenizer.json / tokenizer.model file or folder, instead of the model's own")
      ->envname("ZEROLAYER_TOKENIZER");
  app.add_option("-t,--threads", flags.threads, "Compute threads (default: one per core)")
      ->envname("ZEROLAYER_THREADS")
      ->check(CLI::Range(0, 1024));
  app.add_option("--device", flags.device, "Where the model runs: cpu, cuda or cuda:N")
      ->envname("ZEROLAYER_DEVICE")
      ->capture_default_str();
  app.add_flag("--batch-invariant", flags.batch_invariant,
               "On a CUDA device, make each request's output independent of the batch around it, bit for bit "
               "(fixed GEMM algorithms, no split-k attention; may be slower). The CPU always is")
      ->envname("ZEROLAYER_BATCH_INVARIANT");
  app.add_option("--max-seq-len", flags.max_seq_len,
                 "Context length in tokens (default: the model's; may only shrink it)")
      ->envname("ZEROLAYER_MAX_SEQ_LEN")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--dtype", flags.dtype,
                 "Weight matrices as auto (as stored), f32, f16 or bf16, converted at load")
      ->envname("ZEROLAYER_DTYPE")
      ->check(CLI::IsMember({"auto", "f32", "float32", "f16", "float16", "half", "bf16", "bfloat16"}));
  app.add_option("--quantization", flags.quantization,
                 "Quantize weight matrices at load: none, int8 (per-row scale), q8_0, q4_0, q5_0 or q5_1 (GGUF "
                 "blocks of 32), q4_k or q6_k (GGUF super-blocks of 256: every matrix's width must be a multiple of 256)")
      ->envname("ZEROLAYER_QUANTIZATION")
      ->check(CLI::IsMember({"none", "int8", "q8_0", "q4_0", "q5_0", "q5_1", "q4_k", "q6_k"}));
  app.add_option("--kv-cache-dtype", flags.kv_cache_dtype,
                 "KV cache storage: auto (bf16 for bf16 weights, else f16), f32, f16, bf16, or 8 bits with an f16 "
                 "scale per 32 values: q8_0 (int8, as llama.cpp's) or fp8 (e4m3). CUDA: auto or bf16")
      ->envname("ZEROLAYER_KV_CACHE_DTYPE")
      ->check(CLI::IsMember({"auto", "f32", "float32", "f16", "float16", "half", "bf16", "bfloat16", "fp8",
                             "fp8_e4m3", "q8_0"}))
      ->capture_default_str();
}

StatusOr<WeightFormat> weight_format_from_flags(const ModelFlags& flags) {
  WeightFormat format;
  ZL_RETURN_IF_ERROR(parse_dtype_flag(flags.dtype, format));
  ZL_RETURN_IF_ERROR(parse_quantization_flag(flags.quantization, format));
  return format;
}

StatusOr<EngineConfig> engine_config_from_flags(const ModelFlags& flags) {
  EngineConfig config;
  config.model = flags.model;
  config.tokenizer = flags.tokenizer;
  config.num_threads = flags.threads;
  ZL_ASSIGN_OR_RETURN(config.device, parse_device(flags.device));
  config.batch_invariant = flags.batch_invariant;
  config.max_seq_len = flags.max_seq_len;
  ZL_ASSIGN_OR_RETURN(config.weight_format, weight_format_from_flags(flags));
  ZL_ASSIGN_OR_RETURN(config.kv_cache_dtype, parse_kv_cache_dtype(flags.kv_cache_dtype));
  config.load_progress = show_load_progress;
  return config;
}

int report_error(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

}  // namespace zl::cli
