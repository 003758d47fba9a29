// Opening a model by its spec: a Hugging Face model directory (config.json,
// safetensors, tokenizer files), a GGUF file, `dummy:NAME[:SEED]`, or a
// Hugging Face Hub id (`ORG/NAME[@REVISION][:QUANT]`, model/hf_hub.h) that is
// not an existing path: found in the hub cache, or downloaded into it.
//
// open_model reads and validates metadata, the tensor index and the tokenizer
// without converting any weight (what `zerolayer check` needs); load_weights
// then produces the f32 weights the forward pass reads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "model/config.h"
#include "model/tensor_index.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"
#include "zerolayer/status.h"

namespace zl {

struct LoadOptions {
  std::string tokenizer_path;  // overrides the tokenizer that comes with the model
  // Conversion of weight matrices at load (--dtype, --quantization); the
  // default keeps them as stored.
  WeightFormat weight_format;
};

enum class ModelFormat { kHuggingFace, kGguf, kDummy };
const char* model_format_name(ModelFormat format);

struct ModelSource {
  std::string spec;             // as given: a path, a Hub id or dummy:NAME
  std::string path;             // the folder or .gguf file read: the spec, or where a Hub id resolved; "" for dummy
  ModelFormat format = ModelFormat::kDummy;
  ModelConfig config;
  TensorIndex tensors;          // empty for dummy models
  uint64_t dummy_seed = 0;
  std::unique_ptr<Tokenizer> tokenizer;  // null when none was found...
  Status tokenizer_status;               // ...and this says why
  std::string tokenizer_source;          // where it came from, for `check`
  std::string chat_template;             // from GGUF metadata, if any
  WeightFormat weight_format;            // from LoadOptions; load_model_weights applies it
};

StatusOr<ModelSource> open_model(const std::string& spec, const LoadOptions& options = {});

// Converts or maps the weights, then packs them for the CPU kernels
// (pack_weights_for_cpu); progress(done, total) after each tensor.
StatusOr<ModelWeights> load_model_weights(const ModelSource& source,
                                          const std::function<void(int, int)>& progress = {});

}  // namespace zl
