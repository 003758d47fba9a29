#include "model/weights.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>

#include "core/check.h"
#include "core/huge_buffer.h"
#include "kernels/cpu/quantize.h"
#include "model/arch.h"

namespace zl {
namespace {

struct GlobalNames {
  const char* embed;
  const char* norm;
  const char* lm_head;
};

GlobalNames global_names(TensorNaming naming) {
  if (naming == TensorNaming::kGguf) return {"token_embd.weight", "output_norm.weight", "output.weight"};
  return {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"};
}

std::string layer_tensor_name(TensorNaming naming, int layer, const LayerTensor& t) {
  if (naming == TensorNaming::kGguf) return str_cat("blk.", layer, ".", t.gguf_suffix);
  return str_cat("model.layers.", layer, ".", t.hf_suffix);
}

const ArchDef& arch_of(const ModelConfig& c) {
  const ArchDef* arch = find_arch(c.arch);
  CHECK(arch != nullptr) << "unknown architecture " << c.arch;
  return *arch;
}

// Returns an f32 view of a vector tensor: in place when it is f32 and
// aligned, otherwise a converted copy owned by `weights`.
const float* tensor_as_f32(const TensorInfo& info, ModelWeights& weights) {
  if (info.dtype == DType::kF32 && reinterpret_cast<uintptr_t>(info.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(info.data);
  float* dst = weights.allocate(info.num_elements());
  dtype_to_f32(info.dtype, info.data, dst, info.num_elements());
  return dst;
}

// Rows [begin, begin + rows) of m, in place (rows are independent in every format).
WeightMatrix row_range(const WeightMatrix& m, int64_t begin, int64_t rows) {
  if (begin == 0 && rows == m.rows) return m;
  WeightMatrix part = m;
  part.data = m.row(begin);
  part.rows = rows;
  if (m.scales != nullptr) part.scales = m.scales + begin;
  return part;
}

bool is_float_dtype(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

DType target_dtype(DType stored, const WeightFormat& f) {
  switch (f.quantization) {
    case Quantization::kInt8: return DType::kI8;
    case Quantization::kQ8_0: return DType::kQ8_0;
    case Quantization::kQ4_0: return DType::kQ4_0;
    case Quantization::kQ5_0: return DType::kQ5_0;
    case Quantization::kQ5_1: return DType::kQ5_1;
    case Quantization::kQ4_K: return DType::kQ4_K;
    case Quantization::kQ6_K: return DType::kQ6_K;
    case Quantization::kNone: break;
  }
  return f.convert_dtype && is_float_dtype(stored) ? f.dtype : stored;
}

// Re-encodes rows [begin, end) of `src` as dst's dtype.
void convert_rows(const WeightMatrix& src, WeightMatrix& dst, uint8_t* out, float* scales, int64_t begin,
                  int64_t end) {
  std::vector<float> row(static_cast<size_t>(src.cols));
  const int64_t row_bytes = dst.row_bytes();
  for (int64_t r = begin; r < end; ++r) {
    src.row_to_f32(r, row.data());
    uint8_t* o = out + r * row_bytes;
    switch (dst.dtype) {
      case DType::kF32: std::memcpy(o, row.data(), static_cast<size_t>(row_bytes)); break;
      case DType::kF16:
      case DType::kBF16:
        for (int64_t i = 0; i < src.cols; ++i) {
          uint16_t h = dst.dtype == DType::kF16 ? f32_to_f16(row[i]) : f32_to_bf16(row[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case DType::kQ8_0: cpu::quantize_row_q8_0(row.data(), o, src.cols); break;
      case DType::kQ4_0: cpu::quantize_row_q4_0(row.data(), o, src.cols); break;
      case DType::kQ5_0: cpu::quantize_row_q5_0(row.data(), o, src.cols); break;
      case DType::kQ5_1: cpu::quantize_row_q5_1(row.data(), o, src.cols); break;
      case DType::kQ4_K: cpu::quantize_row_q4_k(row.data(), o, src.cols); break;
      case DType::kQ6_K: cpu::quantize_row_q6_k(row.data(), o, src.cols); break;
      case DType::kI8: scales[r] = cpu::quantize_row_i8(row.data(), reinterpret_cast<int8_t*>(o), src.cols); break;
      case DType::kQ5_K:
      case DType::kQ3_K:
      case DType::kQ2_K:
      case DType::kIQ4_NL:
      case DType::kIQ4_XS:  // read from GGUF files only: target_dtype never picks them
        CHECK(false) << "no quantizer for " << dtype_name(dst.dtype);
    }
  }
}

// The tensor as a WeightMatrix in the format asked for: in place when it is
// stored that way, otherwise converted (on all cores) into owned storage.
StatusOr<WeightMatrix> matrix_in_format(const TensorInfo& info, const WeightFormat& format, ModelWeights& weights,
                                        const std::string& source) {
  // [..., rows, cols]: a stack of matrices (experts) is one of stacked rows.
  WeightMatrix stored;
  stored.dtype = info.dtype;
  stored.data = info.data;
  stored.rows = info.num_elements() / info.shape.back();
  stored.cols = info.shape.back();
  WeightMatrix dst = stored;
  dst.dtype = target_dtype(info.dtype, format);
  if (dst.dtype == stored.dtype) return stored;
  if (dtype_block_elems(dst.dtype) > 1 || dst.dtype == DType::kI8) {
    const int64_t block = std::max<int64_t>(32, dtype_block_elems(dst.dtype));
    if (stored.cols % block != 0)
      return invalid_argument(source, ": cannot quantize ", info.name, " to ", dtype_name(dst.dtype),
                              ": its ", stored.cols, " columns are not a multiple of ", block);
  }
  uint8_t* out = weights.allocate_bytes(dst.rows * dst.row_bytes());
  float* scales = dst.dtype == DType::kI8 ? weights.allocate(dst.rows) : nullptr;
  dst.data = out;
  dst.scales = scales;
  int num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (stored.rows * stored.cols < (1 << 20)) num_threads = 1;
  std::vector<std::thread> threads;
  for (int t = 1; t < num_threads; ++t)
    threads.emplace_back(convert_rows, std::cref(stored), std::ref(dst), out, scales,
                         stored.rows * t / num_threads, stored.rows * (t + 1) / num_threads);
  convert_rows(stored, dst, out, scales, 0, stored.rows / num_threads);
  for (auto& th : threads) th.join();
  return dst;
}

}  // namespace

StatusOr<WeightMatrix> convert_matrix(const TensorInfo& info, const WeightFormat& format, ModelWeights& weights) {
  return matrix_in_format(info, format, weights, "tensor");
}

void ModelWeights::FreeDeleter::operator()(void* p) const { std::free(p); }

namespace {
constexpr size_t kHugePageBytes = size_t{2} << 20;
}  // namespace

uint8_t* ModelWeights::allocate_bytes(int64_t num_bytes) {
  size_t size = (static_cast<size_t>(num_bytes) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, std::max<size_t>(size, 64));
  CHECK(p != nullptr) << "out of memory allocating " << num_bytes << " bytes of weights";
  // A decode step streams every matrix whole: on 2 MiB pages one TLB entry
  // covers 512 times more of the stream (measurements:
  // bench/results/code_notes.md#huge-pages-for-weights).
  if (size >= kHugePageBytes) advise_huge_pages(p, size);
  owned.emplace_back(static_cast<uint8_t*>(p));
  return owned.back().get();
}

float* ModelWeights::allocate(int64_t num_elems) {
  return reinterpret_cast<float*>(allocate_bytes(num_elems * 4));
}

int64_t ModelWeights::matrix_bytes() const {
  int64_t total = 0;
  for (const LayerWeights& l : layers)
    LayerWeights::for_each_matrix(l, [&](const WeightMatrix& m) { total += m.num_bytes(); });
  return total + lm_head.num_bytes();
}

void pack_weights_for_cpu(ModelWeights& weights) {
  if (cpu::active_isa() != cpu::Isa::kAvx512) return;
  auto pack = [&](WeightMatrix& m) {
    const int64_t bytes = cpu::packed_bytes(m);
    if (bytes == 0 || m.packed != nullptr) return;
    uint8_t* dst = weights.allocate_bytes(bytes);
    cpu::pack_matrix(m, dst);
    m.packed = dst;
    for (const auto& file : weights.files) file->release_pages(m.data, static_cast<size_t>(m.rows * m.row_bytes()));
  };
  for (LayerWeights& l : weights.layers) LayerWeights::for_each_matrix(l, pack);
  pack(weights.lm_head);
}

Status parse_dtype_flag(const std::string& text, WeightFormat& format) {
  format.convert_dtype = true;
  if (text == "auto") {
    format.convert_dtype = false;
  } else if (text == "f32" || text == "float32" || text == "float") {
    format.dtype = DType::kF32;
  } else if (text == "f16" || text == "float16" || text == "half") {
    format.dtype = DType::kF16;
  } else if (text == "bf16" || text == "bfloat16") {
    format.dtype = DType::kBF16;
  } else {
    return invalid_argument("--dtype ", text, ": expected auto, f32, f16 or bf16");
  }
  return ok_status();
}

Status parse_quantization_flag(const std::string& text, WeightFormat& format) {
  if (text == "none" || text.empty()) {
    format.quantization = Quantization::kNone;
  } else if (text == "int8") {
    format.quantization = Quantization::kInt8;
  } else if (text == "q8_0") {
    format.quantization = Quantization::kQ8_0;
  } else if (text == "q4_0") {
    format.quantization = Quantization::kQ4_0;
  } else if (text == "q5_0") {
    format.quantization = Quantization::kQ5_0;
  } else if (text == "q5_1") {
    format.quantization = Quantization::kQ5_1;
  } else if (text == "q4_k") {
    format.quantization = Quantization::kQ4_K;
  } else if (text == "q6_k") {
    format.quantization = Quantization::kQ6_K;
  } else {
    return invalid_argument("--quantization ", text, ": expected none, int8, q8_0, q4_0, q5_0, q5_1, q4_k or q6_k");
  }
  return ok_status();
}

std::string weight_format_name(const WeightFormat& f) {
  switch (f.quantization) {
    case Quantization::kInt8: return "int8";
    case Quantization::kQ8_0: return "q8_0";
    case Quantization::kQ4_0: return "q4_0";
    case Quantization::kQ5_0: return "q5_0";
    case Quantization::kQ5_1: return "q5_1";
    case Quantization::kQ4_K: return "q4_k";
    case Quantization::kQ6_K: return "q6_k";
    case Quantization::kNone: break;
  }
  return f.convert_dtype ? dtype_name(f.dtype) : "as stored";
}

StatusOr<KvCacheDtype> parse_kv_cache_dtype(const std::string& text) {
  if (text == "auto") return KvCacheDtype::kAuto;
  if (text == "f32" || text == "float32" || text == "float") return KvCacheDtype::kF32;
  if (text == "f16" || text == "float16" || text == "half") return KvCacheDtype::kF16;
  if (text == "bf16" || text == "bfloat16") return KvCacheDtype::kBF16;
  if (text == "fp8" || text == "fp8_e4m3") return KvCacheDtype::kFp8;
  if (text == "q8_0") return KvCacheDtype::kQ8_0;
  return invalid_argument("--kv-cache-dtype ", text, ": expected auto, f32, f16, bf16, fp8 or q8_0");
}

const char* kv_cache_dtype_name(KvCacheDtype dtype) {
  switch (dtype) {
    case KvCacheDtype::kAuto: return "auto";
    case KvCacheDtype::kF32: return "f32";
    case KvCacheDtype::kF16: return "f16";
    case KvCacheDtype::kBF16: return "bf16";
    case KvCacheDtype::kFp8: return "fp8";
    case KvCacheDtype::kQ8_0: return "q8_0";
  }
  return "?";
}

std::vector<TensorSpec> expected_tensors(const ModelConfig& c, TensorNaming naming) {
  GlobalNames g = global_names(naming);
  const std::vector<LayerTensor> layer_tensors = arch_of(c).layer_tensors(c);
  std::vector<TensorSpec> specs;
  specs.push_back({g.embed, {c.vocab_size, c.dim}, true});
  for (int layer = 0; layer < c.num_layers; ++layer)
    for (const LayerTensor& t : layer_tensors)
      if (t.in(naming)) specs.push_back({layer_tensor_name(naming, layer, t), t.shape, true});
  specs.push_back({g.norm, {c.dim}, true});
  if (!c.tie_word_embeddings) specs.push_back({g.lm_head, {c.vocab_size, c.dim}, true});
  // llama.cpp's converter writes LongRoPE's factors as tensors (arch/phi3.cpp).
  if (naming == TensorNaming::kGguf && c.rope_scaling.type == RopeScalingType::kLongRope)
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"})
      specs.push_back({name, {c.rope_dim() / 2}, true, false});
  return specs;
}

int64_t config_num_params(const ModelConfig& c) {
  int64_t total = 0;
  for (const TensorSpec& spec : expected_tensors(c, TensorNaming::kHuggingFace)) {
    int64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    total += n;
  }
  return total;
}

Status check_tensors(const ModelConfig& config, const TensorIndex& tensors, TensorNaming naming,
                     const std::string& source) {
  std::set<std::string> expected;
  for (const TensorSpec& spec : expected_tensors(config, naming)) {
    expected.insert(spec.name);
    auto it = tensors.find(spec.name);
    if (it == tensors.end()) {
      if (spec.required) return data_loss(source, ": tensor ", spec.name, " is missing");
      continue;
    }
    if (it->second.shape != spec.shape)
      return data_loss(source, ": tensor ", spec.name, " has shape ", shape_to_string(it->second.shape),
                       ", expected ", shape_to_string(spec.shape), " from the model config");
  }
  for (const auto& [name, info] : tensors) {
    // transformers 4.3x saved rope's inverse frequencies as a buffer; they are
    // recomputed from the config (as transformers itself now does).
    if (expected.count(name) != 0 || name.ends_with(".rotary_emb.inv_freq")) continue;
    return unimplemented(source, ": tensor ", name, " is not used by the ", config.arch,
                         " recipe of this config (it would be silently dropped)");
  }
  return ok_status();
}

StatusOr<ModelWeights> load_weights(const ModelConfig& c, const TensorIndex& tensors,
                                    TensorNaming naming, const std::string& source,
                                    const std::function<void(int, int)>& progress, const WeightFormat& format) {
  ZL_RETURN_IF_ERROR(check_tensors(c, tensors, naming, source));
  ModelWeights w;
  const std::vector<LayerTensor> layer_tensors = arch_of(c).layer_tensors(c);
  int done = 0, total = 0;
  for (const TensorSpec& spec : expected_tensors(c, naming)) total += spec.weight;
  auto keep_file = [&](const TensorInfo& info) {
    if (info.file) {
      bool known = false;
      for (const auto& f : w.files) known |= f == info.file;
      if (!known) w.files.push_back(info.file);
    }
    if (progress) progress(++done, total);
  };
  auto get_vector = [&](const std::string& name, bool is_norm) {
    const TensorInfo& info = tensors.at(name);
    const float* p = tensor_as_f32(info, w);
    if (is_norm && c.norm_weight_offset != 0.0f) {
      // Gemma's (1 + w), summed once here in f32 as transformers does per call.
      float* shifted = w.allocate(info.num_elements());
      for (int64_t i = 0; i < info.num_elements(); ++i) shifted[i] = p[i] + c.norm_weight_offset;
      p = shifted;
    }
    keep_file(info);
    return p;
  };
  auto get_matrix = [&](const std::string& name, WeightMatrix& dst) -> Status {
    const TensorInfo& info = tensors.at(name);
    ZL_ASSIGN_OR_RETURN(dst, matrix_in_format(info, format, w, source));
    keep_file(info);
    return ok_status();
  };
  GlobalNames g = global_names(naming);
  ZL_RETURN_IF_ERROR(get_matrix(g.embed, w.tok_embeddings));
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int layer = 0; layer < c.num_layers; ++layer) {
    LayerWeights& lw = w.layers[static_cast<size_t>(layer)];
    lw.experts.resize(static_cast<size_t>(c.num_experts));
    for (const LayerTensor& t : layer_tensors) {
      if (!t.in(naming)) continue;
      std::string name = layer_tensor_name(naming, layer, t);
      if (t.vec != nullptr) {
        lw.*t.vec = get_vector(name, t.is_norm);
        continue;
      }
      WeightMatrix whole;
      ZL_RETURN_IF_ERROR(get_matrix(name, whole));
      if (t.expert_mat != nullptr) {
        // A stack's expert e is rows [e * rows, (e + 1) * rows).
        const int64_t rows = t.shape[t.shape.size() - 2];
        for (int32_t e = 0; e < c.num_experts; ++e) {
          if (t.expert >= 0 && t.expert != e) continue;
          lw.experts[static_cast<size_t>(e)].*t.expert_mat = row_range(whole, t.expert < 0 ? e * rows : 0, rows);
        }
        continue;
      }
      int64_t row = 0;
      for (const LayerTensor::Part& part : t.parts) {
        lw.*part.mat = row_range(whole, row, part.rows);
        row += part.rows;
      }
    }
  }
  w.final_norm = get_vector(g.norm, true);
  if (c.tie_word_embeddings) {
    w.lm_head = w.tok_embeddings;
  } else {
    ZL_RETURN_IF_ERROR(get_matrix(g.lm_head, w.lm_head));
  }
  return w;
}

}  // namespace zl
