// KV memory of the forward pass: one arena of fixed-size blocks per layer for
// keys and one for values. Who owns which block is not decided here (that is
// the engine's block manager); a sequence hands the forward pass its block
// table, and position p of that sequence lives in block table[p / block_size],
// row p % block_size.
//
// With window slots (num_window_slots > 0), the sliding-window layers keep
// their KV apart, in an arena of that many blocks: a sequence hands those
// layers a second table (the engine's engine/window_slots.h), whose entries
// are needed only for the blocks within the window. Without, every layer
// uses the block table.
//
// Keys and values are stored in a KvCacheDtype, each layer's arena laid out
// head-major (kernels/cpu/kv_format.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/huge_buffer.h"
#include "kernels/cpu/kv_format.h"
#include "model/config.h"
#include "model/weights.h"
#include "zerolayer/status.h"

namespace zl {

// What KvCacheDtype::kAuto means on the CPU: bf16 beside bf16 weight
// matrices, else f16 (vLLM's auto turns f32 and f16 models into f16;
// llama.cpp's default is f16).
KvCacheDtype default_kv_dtype(const ModelWeights& weights);

class KvCache {
 public:
  // Allocates num_blocks blocks of block_size tokens for every layer, or
  // for the full-attention layers only and num_window_slots blocks for the
  // windowed ones (when the model has any and num_window_slots > 0).
  // dtype: resolved (not kAuto).
  static StatusOr<std::unique_ptr<KvCache>> create(const ModelConfig& config, int32_t num_blocks,
                                                   int32_t block_size, int32_t num_window_slots = 0,
                                                   KvCacheDtype dtype = KvCacheDtype::kF32);
  // Bytes of one block of keys and values over `num_layers` layers.
  static int64_t block_bytes(const ModelConfig& config, int32_t block_size, int32_t num_layers, KvCacheDtype dtype);
  // A pool whose memory lives elsewhere (a CUDA device, whose KV is bf16):
  // block ids and sizes only; k() and v() are null and copy_block calls `copy_block`.
  static std::unique_ptr<KvCache> create_external(const ModelConfig& config, int32_t num_blocks, int32_t block_size,
                                                  std::function<void(int32_t src, int32_t dst)> copy_block);

  // Commits the pool's memory now instead of at each block's first write
  // (see populate_huge_buffer): a no-op for an external pool.
  Status populate(int num_threads = 1);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t kv_dim() const { return kv_dim_; }
  // The arena layout of `layer` (its head stride depends on the arena's blocks).
  const cpu::KvLayout& layout(int32_t layer) const { return uses_window_table(layer) ? window_layout_ : block_layout_; }
  KvCacheDtype dtype() const { return block_layout_.dtype; }
  int32_t num_window_slots() const { return num_window_slots_; }
  // Whether `layer` reads the window table rather than the block table.
  bool uses_window_table(int32_t layer) const { return windowed_[static_cast<size_t>(layer)] != 0; }
  // One layer's arena: num_blocks (or num_window_slots) blocks of layout(layer).
  uint8_t* k(int32_t layer) { return k_ ? static_cast<uint8_t*>(k_.get()) + offset_[static_cast<size_t>(layer)] : nullptr; }
  uint8_t* v(int32_t layer) { return v_ ? static_cast<uint8_t*>(v_.get()) + offset_[static_cast<size_t>(layer)] : nullptr; }
  // Copies one block's keys and values, in every layer that uses the block
  // table (KV compaction).
  void copy_block(int32_t src, int32_t dst);
  // The bytes copy_block() copies.
  int64_t bytes_per_block() const;

 private:
  KvCache() = default;
  void lay_out(const ModelConfig& config, int32_t num_blocks, int32_t block_size, int32_t num_window_slots,
               KvCacheDtype dtype);

  int32_t num_blocks_ = 0, block_size_ = 0, kv_dim_ = 0, num_window_slots_ = 0;
  cpu::KvLayout block_layout_;   // the arenas of layers that use the block table
  cpu::KvLayout window_layout_;  // the window-slot arenas
  std::vector<uint8_t> windowed_;  // [num_layers] 1: the layer's KV is in window slots
  std::vector<int64_t> offset_;    // [num_layers] bytes before the layer's arena
  int64_t total_bytes_ = 0;
  // Each layer's arena, one layer after another.
  HugeBuffer k_;
  HugeBuffer v_;  // same
  std::function<void(int32_t, int32_t)> external_copy_;  // set for external storage
};

}  // namespace zl
