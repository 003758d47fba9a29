// Reader for GGUF (llama.cpp's single-file format), versions 2 and 3:
// magic, version, tensor and key/value counts, typed metadata, tensor infos,
// then an aligned data section. All bytes are untrusted: every count, length,
// offset and shape is bounded and checked against the file end before use, so
// a corrupt file gives a Status naming the file and the key or tensor.
// Tensors keep GGUF's own names (token_embd.weight, blk.N.attn_q.weight, ...)
// and point into a shared read-only mmap; shapes are row-major (ne[] reversed).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "model/config.h"
#include "model/tensor_index.h"
#include "zerolayer/status.h"

namespace zl {

// GGUF metadata value types, as numbered in the file.
enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* gguf_type_name(GgufType type);

// One metadata value. Integers widen to uint64_t (unsigned types) or int64_t
// (signed), floats to double; `type` keeps the stored type. Arrays hold one
// element type (`array_type`); arrays of arrays are rejected by the reader.
struct GgufValue {
  using Storage = std::variant<uint64_t, int64_t, double, bool, std::string,
                               std::vector<uint64_t>, std::vector<int64_t>, std::vector<double>,
                               std::vector<bool>, std::vector<std::string>>;
  GgufType type = GgufType::kU8;
  GgufType array_type = GgufType::kU8;  // meaningful when type == kArray
  Storage value;

  // Any integer type whose value fits int64_t (bool is not an integer).
  std::optional<int64_t> as_int() const;
  // f32/f64, or any integer.
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  // Array accessors; nullptr unless the array's elements have that kind.
  const std::vector<std::string>* as_string_array() const;
  const std::vector<double>* as_float_array() const;  // f32/f64 elements
  // Integer elements of any width, widened; nullopt if not an integer array
  // or a value does not fit int64_t.
  std::optional<std::vector<int64_t>> as_int_array() const;
  // Element count for arrays, 1 for scalars.
  size_t size() const;
};

struct GgufFile {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = 32;    // general.alignment
  uint64_t data_offset = 0;   // file offset of the data section (aligned)
  std::map<std::string, GgufValue, std::less<>> metadata;
  TensorIndex tensors;
  std::shared_ptr<MappedFile> file;

  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
};

// GGML tensor types accepted: F32=0, F16=1, Q4_0=2, Q8_0=8, Q4_K=12, Q6_K=14,
// BF16=30; others are unimplemented (naming the tensor and type). Quantized
// tensors need ne[0] to be a multiple of their block (32; k-quants 256). Tensor offsets are relative to the data section, must
// be multiples of the alignment, and tensors may not overlap.
StatusOr<GgufFile> read_gguf(const std::string& path);

// The model shape from {arch}.* keys, general.architecture picking the
// architecture file (model/arch.h) that reads the family's own keys and sets
// its recipe; a key that changes the computation and that the family does
// not read is refused by name. tie_word_embeddings is true when output.weight
// is absent.
// eos_token_ids holds tokenizer.ggml.eos_token_id, then eot/eom ids if set.
// The result has passed validate_config.
StatusOr<ModelConfig> gguf_model_config(const GgufFile& gguf);

}  // namespace zl
