#include "model/kv_cache.h"

#include <cstring>

namespace zl {

StatusOr<std::unique_ptr<KvCache>> KvCache::create(const ModelConfig& config, int32_t num_blocks,
                                                   int32_t block_size) {
  if (num_blocks <= 0 || block_size <= 0)
    return invalid_argument("KV cache needs positive num_blocks and block_size, got ", num_blocks,
                            " and ", block_size);
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->num_blocks_ = num_blocks;
  cache->block_size_ = block_size;
  cache->kv_dim_ = config.kv_dim();
  cache->num_layers_ = config.num_layers;
  cache->layer_stride_ = int64_t{num_blocks} * block_size * config.kv_dim();
  size_t total = static_cast<size_t>(cache->layer_stride_) * static_cast<size_t>(config.num_layers);
  cache->k_ = allocate_huge_buffer(total * sizeof(float));
  cache->v_ = allocate_huge_buffer(total * sizeof(float));
  if (!cache->k_ || !cache->v_)
    return resource_exhausted("cannot allocate a KV cache of ", 2 * total * sizeof(float), " bytes");
  return cache;
}

std::unique_ptr<KvCache> KvCache::create_external(const ModelConfig& config, int32_t num_blocks, int32_t block_size,
                                                  std::function<void(int32_t, int32_t)> copy_block) {
  std::unique_ptr<KvCache> cache(new KvCache());
  cache->num_blocks_ = num_blocks;
  cache->block_size_ = block_size;
  cache->kv_dim_ = config.kv_dim();
  cache->num_layers_ = config.num_layers;
  cache->external_copy_ = std::move(copy_block);
  return cache;
}

void KvCache::copy_block(int32_t src, int32_t dst) {
  if (external_copy_) return external_copy_(src, dst);
  const int64_t block_floats = int64_t{block_size_} * kv_dim_;
  for (int32_t layer = 0; layer < num_layers_; ++layer) {
    std::memcpy(k(layer) + dst * block_floats, k(layer) + src * block_floats, sizeof(float) * block_floats);
    std::memcpy(v(layer) + dst * block_floats, v(layer) + src * block_floats, sizeof(float) * block_floats);
  }
}

}  // namespace zl
