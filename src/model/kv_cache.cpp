#include "model/kv_cache.h"

#include <cstring>

namespace zl {

int64_t KvCache::block_bytes(const ModelConfig& config, int32_t block_size, int32_t num_layers) {
  return int64_t{2} * num_layers * block_size * config.kv_dim() * int64_t{sizeof(float)};
}

void KvCache::lay_out(const ModelConfig& config, int32_t num_blocks, int32_t block_size, int32_t num_window_slots) {
  num_blocks_ = num_blocks;
  block_size_ = block_size;
  kv_dim_ = config.kv_dim();
  num_window_slots_ = config.num_window_layers() > 0 ? num_window_slots : 0;
  total_floats_ = 0;
  for (int32_t layer = 0; layer < config.num_layers; ++layer) {
    const bool windowed = num_window_slots_ > 0 && config.layer_window(layer) > 0;
    windowed_.push_back(windowed ? 1 : 0);
    offset_.push_back(total_floats_);
    total_floats_ += int64_t{windowed ? num_window_slots_ : num_blocks} * block_size * kv_dim_;
  }
}

StatusOr<std::unique_ptr<KvCache>> KvCache::create(const ModelConfig& config, int32_t num_blocks,
                                                   int32_t block_size, int32_t num_window_slots) {
  if (num_blocks <= 0 || block_size <= 0 || num_window_slots < 0)
    return invalid_argument("KV cache needs positive num_blocks and block_size, got ", num_blocks,
                            " and ", block_size, " (window slots ", num_window_slots, ")");
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->lay_out(config, num_blocks, block_size, num_window_slots);
  const size_t bytes = static_cast<size_t>(cache->total_floats_) * sizeof(float);
  cache->k_ = allocate_huge_buffer(bytes);
  cache->v_ = allocate_huge_buffer(bytes);
  if (!cache->k_ || !cache->v_) return resource_exhausted("cannot allocate a KV cache of ", 2 * bytes, " bytes");
  return cache;
}

Status KvCache::populate() {
  const size_t bytes = static_cast<size_t>(total_floats_) * sizeof(float);
  for (void* buffer : {k_.get(), v_.get()}) {
    if (!buffer) continue;
    if (int err = populate_huge_buffer(buffer, bytes); err != 0)
      return resource_exhausted("cannot commit the KV pool's ", 2 * bytes, " bytes: ", std::strerror(err));
  }
  return ok_status();
}

std::unique_ptr<KvCache> KvCache::create_external(const ModelConfig& config, int32_t num_blocks, int32_t block_size,
                                                  std::function<void(int32_t, int32_t)> copy_block) {
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->lay_out(config, num_blocks, block_size, 0);
  cache->external_copy_ = std::move(copy_block);
  return cache;
}

void KvCache::copy_block(int32_t src, int32_t dst) {
  if (external_copy_) return external_copy_(src, dst);
  const int64_t block_floats = int64_t{block_size_} * kv_dim_;
  for (size_t layer = 0; layer < offset_.size(); ++layer) {
    if (windowed_[layer]) continue;
    const int32_t l = static_cast<int32_t>(layer);
    std::memcpy(k(l) + dst * block_floats, k(l) + src * block_floats, sizeof(float) * block_floats);
    std::memcpy(v(l) + dst * block_floats, v(l) + src * block_floats, sizeof(float) * block_floats);
  }
}

}  // namespace zl
