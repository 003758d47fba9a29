// The element types of weights (DType) and the conversion a user may ask
// for at load (WeightFormat: vLLM's --dtype / --quantization). Part of the
// public API through EngineConfig; sizes and conversions are core/dtype.h.
#pragma once

#include <cstdint>
#include <string>

#include "zerolayer/status.h"

namespace zl {

// New values go at the end, so existing ones keep their numbers.
enum class DType : uint8_t {
  kF32, kF16, kBF16, kQ8_0, kQ4_0, kI8, kQ4_K, kQ6_K, kQ5_0, kQ5_1, kQ5_K, kQ3_K, kQ2_K, kIQ4_NL, kIQ4_XS
};

// Conversion of the weight matrices at load. Quantization wins over dtype for
// matrices; with neither, matrices stay as stored.
enum class Quantization { kNone, kInt8, kQ8_0, kQ4_0, kQ4_K, kQ6_K, kQ5_0, kQ5_1 };
struct WeightFormat {
  bool convert_dtype = false;    // dtype below applies to float matrices
  DType dtype = DType::kF32;     // kF32, kF16 or kBF16
  Quantization quantization = Quantization::kNone;
};
// "auto" (as stored), "f32"/"float32", "f16"/"float16"/"half", "bf16"/"bfloat16".
Status parse_dtype_flag(const std::string& text, WeightFormat& format);
// "none", "int8", "q8_0", "q4_0", "q5_0", "q5_1", "q4_k", "q6_k".
Status parse_quantization_flag(const std::string& text, WeightFormat& format);
std::string weight_format_name(const WeightFormat& format);

}  // namespace zl
