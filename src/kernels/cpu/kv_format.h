// How one layer's KV-cache arena (keys or values) is laid out in each
// KvCacheDtype, and the scalar conversions in and out of it. The arena holds
// num_blocks blocks of block_size positions, head-major:
//   [num_kv_heads, num_blocks] tiles, each
//     values [block_size, head_dim] (f32, f16, bf16: the values; q8_0, fp8:
//       one-byte codes), then, for the 8-bit formats only,
//     scales [block_size, ceil(head_dim / 32)] f16, one per block of 32 values
//       of a head (the last one short when head_dim is not a multiple of 32).
// Attention reads one head over a sequence's positions: within a block they
// are contiguous, and so are the blocks of a sequence that holds consecutive
// ones (the contiguous cache policy), so the reads stream.
// An 8-bit value is scale x code: int8 for q8_0 (scale = absmax / 127) and
// OCP e4m3 for fp8 (bias 7, largest finite 448, no infinities; scale =
// absmax / 448). Rounding is to nearest (even for f16, bf16 and e4m3), so a
// position stored once reads back the same on every ISA; attention's vector
// paths dequantize to exactly the values load_kv_head gives.
#pragma once

#include <cstdint>

#include "zerolayer/weight_format.h"

namespace zl::cpu {

constexpr int32_t kKvScaleBlock = 32;  // values per scale in the 8-bit formats

struct KvLayout {
  KvCacheDtype dtype = KvCacheDtype::kF32;  // never kAuto
  int32_t num_kv_heads = 0, head_dim = 0, block_size = 0;
  int64_t num_blocks = 0;       // in the arena
  int32_t value_bytes = 4;      // bytes per value (code)
  int32_t scales_per_head = 0;  // 8-bit formats: ceil(head_dim / 32); else 0
  int64_t tile_bytes = 0;       // one head's block_size positions, scales included
  int64_t head_stride = 0;      // bytes from one head's tiles to the next: num_blocks tiles

  bool has_scales() const { return scales_per_head > 0; }
  int64_t block_bytes() const { return num_kv_heads * tile_bytes; }  // one block, every head
  int64_t arena_bytes() const { return num_kv_heads * head_stride; }
  int64_t tile_offset(int64_t block, int32_t head) const { return head * head_stride + block * tile_bytes; }
  // Offsets from the arena's start: a position's values (codes) and f16 scales for one head.
  int64_t value_offset(int64_t block, int32_t head, int32_t slot) const {
    return tile_offset(block, head) + int64_t{slot} * head_dim * value_bytes;
  }
  int64_t scale_offset(int64_t block, int32_t head, int32_t slot) const {
    return tile_offset(block, head) + int64_t{block_size} * head_dim * value_bytes + int64_t{slot} * scales_per_head * 2;
  }
};

// dtype must be resolved (not kAuto).
KvLayout kv_layout(KvCacheDtype dtype, int32_t num_kv_heads, int32_t head_dim, int32_t block_size, int64_t num_blocks);

// Writes one position of the arena from src: [num_kv_heads, head_dim] f32.
void store_kv(const KvLayout& layout, const float* src, uint8_t* arena, int64_t block, int32_t slot);
// The head_dim values of `head` at one position, as f32.
void load_kv_head(const KvLayout& layout, const uint8_t* arena, int64_t block, int32_t slot, int32_t head,
                  float* dst);

// OCP e4m3: exact decoding; encoding rounds to nearest even and saturates at
// +-448 (NaN gives 0).
float e4m3_to_f32(uint8_t code);
uint8_t f32_to_e4m3(float x);

}  // namespace zl::cpu
