#include "model/kv_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/fault.h"

namespace zl {

KvCacheDtype default_kv_dtype(const ModelWeights& weights) {
  return weights.layers.front().wq.dtype == DType::kBF16 ? KvCacheDtype::kBF16 : KvCacheDtype::kF16;
}

int64_t KvCache::block_bytes(const ModelConfig& config, int32_t block_size, int32_t num_layers, KvCacheDtype dtype) {
  return int64_t{2} * num_layers * cpu::kv_layout(dtype, config.num_kv_heads, config.head_dim, block_size, 1).block_bytes();
}

void KvCache::lay_out(const ModelConfig& config, int32_t num_blocks, int32_t block_size, int32_t num_window_slots,
                      KvCacheDtype dtype) {
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  kv_dim_ = config.kv_dim();
  block_layout_ = cpu::kv_layout(dtype, config.num_kv_heads, config.head_dim, block_size, num_blocks);
  num_window_slots_ = config.num_window_layers() > 0 ? num_window_slots : 0;
  window_layout_ = cpu::kv_layout(dtype, config.num_kv_heads, config.head_dim, block_size, num_window_slots_);
  total_bytes_ = 0;
  for (int32_t layer = 0; layer < config.num_layers; ++layer) {
    const bool windowed = num_window_slots_ > 0 && config.layer_window(layer) > 0;
    windowed_.push_back(windowed ? 1 : 0);
    offset_.push_back(total_bytes_);
    total_bytes_ += (windowed ? window_layout_ : block_layout_).arena_bytes();
  }
}

StatusOr<std::unique_ptr<KvCache>> KvCache::create(const ModelConfig& config, int32_t num_blocks,
                                                   int32_t block_size, int32_t num_window_slots,
                                                   KvCacheDtype dtype) {
  if (dtype == KvCacheDtype::kAuto) return invalid_argument("KV cache: the dtype must be resolved, not auto");
  if (num_blocks <= 0 || block_size <= 0 || num_window_slots < 0)
    return invalid_argument("KV cache needs positive num_blocks and block_size, got ", num_blocks,
                            " and ", block_size, " (window slots ", num_window_slots, ")");
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->lay_out(config, num_blocks, block_size, num_window_slots, dtype);
  const auto bytes = static_cast<size_t>(cache->total_bytes_);
  if (!fault::should_fail(fault::Point::kKvMap)) {
    cache->k_ = allocate_huge_buffer(bytes);
    cache->v_ = allocate_huge_buffer(bytes);
  }
  if (!cache->k_ || !cache->v_) return resource_exhausted("cannot allocate a KV cache of ", 2 * bytes, " bytes");
  return cache;
}

Status KvCache::populate(int num_threads) {
  const auto bytes = static_cast<size_t>(total_bytes_);
  for (void* buffer : {k_.get(), v_.get()}) {
    if (!buffer) continue;
    const int err = fault::should_fail(fault::Point::kKvPopulate) ? ENOMEM
                                                                  : populate_huge_buffer(buffer, bytes, num_threads);
    if (err != 0)
      return resource_exhausted("cannot commit the KV pool's ", 2 * bytes, " bytes: ", std::strerror(err));
  }
  return ok_status();
}

std::unique_ptr<KvCache> KvCache::create_external(const ModelConfig& config, int32_t num_blocks, int32_t block_size,
                                                  std::function<void(int32_t, int32_t)> copy_block) {
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->lay_out(config, num_blocks, block_size, 0, KvCacheDtype::kBF16);
  cache->external_copy_ = std::move(copy_block);
  return cache;
}

int64_t KvCache::bytes_per_block() const {
  const int64_t num_layers = std::count(windowed_.begin(), windowed_.end(), 0);
  return 2 * num_layers * block_layout_.block_bytes();
}

void KvCache::copy_block(int32_t src, int32_t dst) {
  if (external_copy_) return external_copy_(src, dst);
  const cpu::KvLayout& l = block_layout_;
  for (size_t layer = 0; layer < offset_.size(); ++layer) {
    if (windowed_[layer]) continue;
    for (uint8_t* arena : {k(static_cast<int32_t>(layer)), v(static_cast<int32_t>(layer))})
      for (int32_t h = 0; h < l.num_kv_heads; ++h)
        std::memcpy(arena + l.tile_offset(dst, h), arena + l.tile_offset(src, h), static_cast<size_t>(l.tile_bytes));
  }
}

}  // namespace zl
