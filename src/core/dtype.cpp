#include "core/dtype.h"

#include "core/check.h"

namespace zl {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kQ8_0: return "Q8_0";
    case DType::kQ4_0: return "Q4_0";
    case DType::kI8: return "I8";
  }
  return "?";
}

int64_t dtype_block_elems(DType dtype) {
  return (dtype == DType::kQ8_0 || dtype == DType::kQ4_0) ? 32 : 1;
}

int64_t dtype_block_bytes(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kQ8_0: return 2 + 32;       // f16 scale, 32 x int8
    case DType::kQ4_0: return 2 + 16;       // f16 scale, 32 x 4-bit
    case DType::kI8: return 1;
  }
  return 0;
}

std::optional<uint64_t> dtype_bytes(DType dtype, uint64_t num_elems) {
  uint64_t block = static_cast<uint64_t>(dtype_block_elems(dtype));
  if (num_elems % block != 0) return std::nullopt;
  uint64_t blocks = num_elems / block;
  uint64_t per = static_cast<uint64_t>(dtype_block_bytes(dtype));
  if (blocks > UINT64_MAX / per) return std::nullopt;
  return blocks * per;
}

void dtype_to_f32(DType dtype, const void* src, float* dst, int64_t num_elems) {
  const uint8_t* p = static_cast<const uint8_t*>(src);
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, p, static_cast<size_t>(num_elems) * 4);
      return;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < num_elems; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = dtype == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    case DType::kI8:
      for (int64_t i = 0; i < num_elems; ++i) dst[i] = static_cast<float>(static_cast<int8_t>(p[i]));
      return;
    case DType::kQ8_0:
      // Block: f16 d, int8 q[32]; x = d * q.
      CHECK(num_elems % 32 == 0);
      for (int64_t b = 0; b < num_elems / 32; ++b, p += 34) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        float d = f16_to_f32(h);
        for (int j = 0; j < 32; ++j) dst[b * 32 + j] = d * static_cast<int8_t>(p[2 + j]);
      }
      return;
    case DType::kQ4_0:
      // Block: f16 d, 16 bytes; element j < 16 is the low nibble of byte j,
      // element j + 16 its high nibble; x = d * (nibble - 8).
      CHECK(num_elems % 32 == 0);
      for (int64_t b = 0; b < num_elems / 32; ++b, p += 18) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        float d = f16_to_f32(h);
        for (int j = 0; j < 16; ++j) {
          dst[b * 32 + j] = d * static_cast<float>((p[2 + j] & 0x0f) - 8);
          dst[b * 32 + j + 16] = d * static_cast<float>((p[2 + j] >> 4) - 8);
        }
      }
      return;
  }
}

}  // namespace zl
