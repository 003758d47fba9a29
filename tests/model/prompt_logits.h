// The logits of one prompt, every position, from a model loaded (and
// converted at load) the way the CLI loads it: shared by the tests that
// compare a model in two forms.
#pragma once

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "model/llama.h"
#include "model/model_loader.h"

namespace zl::test {

// tokens: the prompt, at most 32 (two KV blocks of 16); returns
// [tokens.size(), vocab_size] logits.
inline std::vector<float> prompt_logits(const std::string& spec, const WeightFormat& format,
                                        const std::vector<int32_t>& tokens) {
  LoadOptions options;
  options.weight_format = format;
  auto source = open_model(spec, options);
  EXPECT_TRUE(source.ok()) << source.status().to_string();
  if (!source.ok()) return {};
  auto weights = load_model_weights(*source);
  EXPECT_TRUE(weights.ok()) << weights.status().to_string();
  if (!weights.ok()) return {};
  ThreadPool pool(2);
  LlamaModel model(source->config, *weights, pool, 16);
  auto cache = KvCache::create(source->config, 4, 16);
  std::vector<int32_t> blocks = {2, 0};
  std::vector<int32_t> rows(tokens.size());
  std::iota(rows.begin(), rows.end(), 0);
  SeqChunk chunk{0, static_cast<int32_t>(tokens.size()), 0, blocks};
  std::vector<float> logits(tokens.size() * static_cast<size_t>(source->config.vocab_size));
  EXPECT_TRUE(model.forward({tokens, {&chunk, 1}, rows}, **cache, logits.data()).ok());
  return logits;
}

}  // namespace zl::test
