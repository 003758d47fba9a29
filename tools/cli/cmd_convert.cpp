// `zerolayer convert`: writes a model (dummy ones included) as a GGUF file in
// the weight format the model flags ask for, e.g. for llama.cpp side by side:
//   zerolayer convert --model dummy:llama-1b --quantization q4_0 --out l1b.q4_0.gguf
#include <cstdio>

#include "bundle/model_loader.h"
#include "commands.h"
#include "common.h"
#include "model/gguf_export.h"

namespace zl::cli {

Command add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Write a model as GGUF (f32/f16/bf16/q8_0/q4_0/q5_0/q5_1/q4_k/q6_k weights)");
  auto flags = std::make_shared<ModelFlags>();
  auto out = std::make_shared<std::string>();
  add_model_flags(*cmd, *flags);
  cmd->add_option("-o,--out", *out, "The .gguf file to write")->required();
  return [flags, out]() -> int {
    auto format = weight_format_from_flags(*flags);
    if (!format.ok()) return report_error(format.status());
    LoadOptions options;
    options.weight_format = *format;
    auto source = open_model(flags->model, options);
    if (!source.ok()) return report_error(source.status());
    if (source->format != ModelFormat::kDummy)
      return report_error(unimplemented("convert: only dummy: models have a vocabulary we can write yet"));
    auto weights = load_model_weights(*source);
    if (!weights.ok()) return report_error(weights.status());
    Status s = write_gguf(*out, source->config, *weights, byte_tokenizer_gguf_vocab(source->config.vocab_size), flags->model);
    if (!s.ok()) return report_error(s);
    std::fprintf(stderr, "wrote %s (%s weights)\n", out->c_str(), weight_format_name(*format).c_str());
    return 0;
  };
}

}  // namespace zl::cli
