#include "bundle/model_loader.h"

#include <cstdlib>

#include "bundle/gguf_vocab.h"
#include "core/mapped_file.h"
#include "model/dummy.h"
#include "model/gguf.h"
#include "model/hf_config.h"
#include "model/hf_hub.h"
#include "model/safetensors.h"

namespace zl {
namespace {

constexpr std::string_view kDummyPrefix = "dummy:";

// "dummy:NAME" or "dummy:NAME:SEED".
Status open_dummy(const std::string& spec, ModelSource& source) {
  std::string rest = spec.substr(kDummyPrefix.size());
  std::string name = rest;
  size_t colon = rest.find(':');
  if (colon != std::string::npos) {
    name = rest.substr(0, colon);
    std::string seed = rest.substr(colon + 1);
    char* end = nullptr;
    unsigned long long value = std::strtoull(seed.c_str(), &end, 10);
    if (seed.empty() || *end != '\0') return invalid_argument("--model ", spec, ": the seed after ':' must be a number");
    source.dummy_seed = value;
  }
  ZL_ASSIGN_OR_RETURN(source.config, dummy_config(name));
  source.format = ModelFormat::kDummy;
  source.tokenizer = make_byte_tokenizer(source.config.vocab_size);
  source.tokenizer_source = "built-in byte tokenizer";
  return ok_status();
}

Status open_hf_dir(const std::string& dir, ModelSource& source) {
  source.format = ModelFormat::kHuggingFace;
  ZL_ASSIGN_OR_RETURN(source.config, read_hf_config(dir));
  ZL_ASSIGN_OR_RETURN(source.tensors, read_safetensors_model(dir));
  auto tok = load_tokenizer(dir);
  if (tok.ok()) {
    source.tokenizer = std::move(*tok);
    source.tokenizer_source = dir;
  } else {
    source.tokenizer_status = tok.status();
  }
  return check_tensors(source.config, source.tensors, TensorNaming::kHuggingFace, dir);
}

Status open_gguf(const std::string& path, ModelSource& source) {
  source.format = ModelFormat::kGguf;
  ZL_ASSIGN_OR_RETURN(GgufFile gguf, read_gguf(path));
  ZL_ASSIGN_OR_RETURN(source.config, gguf_model_config(gguf));
  ZL_RETURN_IF_ERROR(check_tensors(source.config, gguf.tensors, TensorNaming::kGguf, path));
  source.tensors = std::move(gguf.tensors);
  auto vocab = gguf_vocab(gguf);
  if (!vocab.ok()) {
    source.tokenizer_status = vocab.status();
    return ok_status();
  }
  source.chat_template = vocab->chat_template;
  auto tok = make_tokenizer_from_vocab(*vocab);
  if (tok.ok()) {
    source.tokenizer = std::move(*tok);
    source.tokenizer_source = path + " (embedded)";
  } else {
    source.tokenizer_status = tok.status().with_prefix(path);
  }
  return ok_status();
}

// The folder or file `spec` names: an existing path as is, else a Hub id
// resolved in (or downloaded into) the Hugging Face cache.
StatusOr<std::string> find_model_files(const std::string& spec) {
  if (is_directory(spec) || file_exists(spec)) return spec;
  std::optional<HfModelId> id = parse_hf_model_id(spec);
  if (!id) {
    return not_found("--model ", spec, ": no such file or directory (expected a model directory, a .gguf file, ",
                     "a Hugging Face id ORG/NAME[@REVISION][:QUANT] or dummy:NAME)");
  }
  ZL_ASSIGN_OR_RETURN(HfHubOptions options, hf_hub_options_from_env());
  StatusOr<std::string> path = resolve_hf_model(*id, options);
  if (!path.ok()) return path.status().with_prefix(str_cat("--model ", spec, " (no such path; as a Hugging Face id)"));
  return path;
}

}  // namespace

const char* model_format_name(ModelFormat format) {
  switch (format) {
    case ModelFormat::kHuggingFace: return "Hugging Face safetensors";
    case ModelFormat::kGguf: return "GGUF";
    case ModelFormat::kDummy: return "dummy";
  }
  return "?";
}

StatusOr<ModelSource> open_model(const std::string& spec, const LoadOptions& options) {
  ModelSource source;
  source.spec = spec;
  source.weight_format = options.weight_format;
  if (spec.rfind(kDummyPrefix, 0) == 0) {
    ZL_RETURN_IF_ERROR(open_dummy(spec, source));
  } else {
    ZL_ASSIGN_OR_RETURN(source.path, find_model_files(spec));
    if (is_directory(source.path)) {
      ZL_RETURN_IF_ERROR(open_hf_dir(source.path, source));
    } else {
      ZL_RETURN_IF_ERROR(open_gguf(source.path, source));
    }
  }
  if (!options.tokenizer_path.empty()) {
    auto tok = load_tokenizer(options.tokenizer_path);
    if (!tok.ok()) return tok.status();
    source.tokenizer = std::move(*tok);
    source.tokenizer_status = ok_status();
    source.tokenizer_source = options.tokenizer_path;
  }
  return source;
}

namespace {

StatusOr<ModelWeights> load_stored_weights(const ModelSource& source,
                                           const std::function<void(int, int)>& progress) {
  switch (source.format) {
    case ModelFormat::kDummy:
      return dummy_weights(source.config, source.dummy_seed, source.weight_format);
    case ModelFormat::kHuggingFace:
      return load_weights(source.config, source.tensors, TensorNaming::kHuggingFace, source.path, progress,
                          source.weight_format);
    case ModelFormat::kGguf:
      return load_weights(source.config, source.tensors, TensorNaming::kGguf, source.path, progress,
                          source.weight_format);
  }
  return internal_error("unknown model format");
}

}  // namespace

StatusOr<ModelWeights> load_model_weights(const ModelSource& source,
                                          const std::function<void(int, int)>& progress) {
  ZL_ASSIGN_OR_RETURN(ModelWeights weights, load_stored_weights(source, progress));
  pack_weights_for_cpu(weights);
  return weights;
}

}  // namespace zl
