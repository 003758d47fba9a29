// dummy:tiny loaded for tests that drive EngineCore on their own thread:
// its model on one compute thread, and a KV cache of num_blocks blocks of
// block_size tokens.
#pragma once

#include <memory>

#include "bundle/model_loader.h"
#include "core/thread_pool.h"
#include "model/kv_cache.h"
#include "model/llama.h"

namespace zl::test {

struct TinyModel {
  TinyModel(int32_t max_batch_tokens, int32_t num_blocks, int32_t block_size)
      : source(std::move(*open_model("dummy:tiny"))),
        weights(std::move(*load_model_weights(source))),
        model(source.config, weights, pool, max_batch_tokens),
        cache(std::move(*KvCache::create(source.config, num_blocks, block_size))) {}

  ModelSource source;
  ModelWeights weights;
  ThreadPool pool{1};
  LlamaModel model;
  std::unique_ptr<KvCache> cache;
};

}  // namespace zl::test
