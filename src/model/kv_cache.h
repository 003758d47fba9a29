// KV memory of the forward pass: one arena of fixed-size blocks per layer for
// keys and one for values. Who owns which block is not decided here (that is
// the engine's block manager); a sequence hands the forward pass its block
// table, and position p of that sequence lives in block table[p / block_size],
// row p % block_size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "core/huge_buffer.h"
#include "core/status.h"
#include "model/config.h"

namespace zl {

class KvCache {
 public:
  // Allocates num_blocks blocks of block_size tokens for every layer.
  static StatusOr<std::unique_ptr<KvCache>> create(const ModelConfig& config, int32_t num_blocks,
                                                   int32_t block_size);
  // A pool whose memory lives elsewhere (a CUDA device): block ids and sizes
  // only; k() and v() are null and copy_block calls `copy_block`.
  static std::unique_ptr<KvCache> create_external(const ModelConfig& config, int32_t num_blocks, int32_t block_size,
                                                  std::function<void(int32_t src, int32_t dst)> copy_block);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t kv_dim() const { return kv_dim_; }
  // [num_blocks, block_size, kv_dim] for one layer.
  float* k(int32_t layer) { return k_ ? static_cast<float*>(k_.get()) + layer * layer_stride_ : nullptr; }
  float* v(int32_t layer) { return v_ ? static_cast<float*>(v_.get()) + layer * layer_stride_ : nullptr; }
  // Copies one block's keys and values, in every layer (KV compaction).
  void copy_block(int32_t src, int32_t dst);

 private:
  KvCache() = default;
  int32_t num_blocks_ = 0, block_size_ = 0, kv_dim_ = 0, num_layers_ = 0;
  int64_t layer_stride_ = 0;  // num_blocks * block_size * kv_dim
  HugeBuffer k_;  // f32 [num_layers, num_blocks, block_size, kv_dim]
  HugeBuffer v_;  // same
  std::function<void(int32_t, int32_t)> external_copy_;  // set for external storage
};

}  // namespace zl
