// The logits of one prompt, every position, from a model loaded (and
// converted at load) the way the CLI loads it: shared by the tests that
// compare a model in two forms.
#pragma once

#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "bundle/model_loader.h"
#include "model/llama.h"

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

// One sequence taught another engine's greedy run: step k feeds the prompt
// (k = 0) or the other engine's token k - 1 at the next positions, through a
// scattered block table, and writes the last row's logits: [vocab_size].
class TeacherForcedRun {
 public:
  TeacherForcedRun(LlamaModel& model, KvCache& cache, std::vector<int32_t> blocks, std::vector<int32_t> prompt,
                   std::vector<int32_t> greedy)
      : model_(model), cache_(cache), blocks_(std::move(blocks)), prompt_(std::move(prompt)),
        greedy_(std::move(greedy)) {}

  Status step(size_t k, float* logits) {
    const std::vector<int32_t> tokens = k == 0 ? prompt_ : std::vector<int32_t>{greedy_[k - 1]};
    const int32_t n = static_cast<int32_t>(tokens.size());
    SeqChunk chunk{0, n, pos_, blocks_};
    const int32_t row = n - 1;
    pos_ += n;
    return model_.forward({tokens, {&chunk, 1}, {&row, 1}}, cache_, logits);
  }

 private:
  LlamaModel& model_;
  KvCache& cache_;
  const std::vector<int32_t> blocks_, prompt_, greedy_;
  int32_t pos_ = 0;
};

}  // namespace zl::test
