// The element types of weights (DType), the conversion a user may ask for at
// load (WeightFormat: vLLM's --dtype / --quantization) and the element type
// of the KV cache (--kv-cache-dtype). Part of the public API through
// EngineConfig; sizes and conversions are core/dtype.h and
// kernels/cpu/kv_format.h.
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

// How the KV cache stores keys and values. kAuto: 16 bits, bf16 when the
// weight matrices are bf16, else f16 (as vLLM's "auto" turns an f32 or f16
// model into f16; llama.cpp's default is f16). The 8-bit kinds keep one f16
// scale per 32 values of a head (absmax): kQ8_0 int8 codes (llama.cpp's
// q8_0), kFp8 e4m3 codes (vLLM's fp8, with block scales instead of one per
// tensor). kF32 is exact, for reference.
enum class KvCacheDtype : uint8_t { kAuto, kF32, kF16, kBF16, kFp8, kQ8_0 };
// "auto", "f32"/"float32", "f16"/"float16"/"half", "bf16"/"bfloat16",
// "fp8"/"fp8_e4m3", "q8_0".
StatusOr<KvCacheDtype> parse_kv_cache_dtype(const std::string& text);
const char* kv_cache_dtype_name(KvCacheDtype dtype);

}  // namespace zl
