// Greedy generation on a real model against llama.cpp: for each prompt in
// tests/golden/generate/stories260K.json (scripts/golden/make_generate_goldens.py),
// the prompt tokenizes to llama.cpp's ids and 60 greedy tokens are exactly
// llama.cpp's, as is the text.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "model/model_loader.h"
#include "test_util.h"

namespace zl {
namespace {

TEST(GenerateModelTest, Stories260KGreedyMatchesLlamaCpp) {
  std::string path = test::shared_path("models/stories260K.gguf");
  if (path.empty()) GTEST_SKIP() << "../shared is missing (stories260K.gguf)";
  auto source = open_model(path);
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  ASSERT_NE(source->tokenizer, nullptr) << source->tokenizer_status.to_string();
  auto weights = load_model_weights(*source);
  ASSERT_TRUE(weights.ok());
  ThreadPool pool(2);
  LlamaModel model(source->config, *weights, pool, 16);  // prompts prefill in several chunks
  auto cache = KvCache::create(source->config, 8, 16);
  ASSERT_TRUE(cache.ok());

  std::ifstream in(test::golden_path("generate/stories260K.json"));
  nlohmann::json cases = nlohmann::json::parse(in);
  ASSERT_GE(cases.size(), 6u);
  for (const auto& c : cases) {
    std::string prompt = c["prompt"].get<std::string>();
    std::vector<int32_t> ids = source->tokenizer->encode(prompt);
    EXPECT_EQ(ids, c["prompt_ids"].get<std::vector<int32_t>>()) << prompt;
    GenerateOptions options;
    options.max_new_tokens = static_cast<int32_t>(c["generated_ids"].size());
    options.sampling.temperature = 0.0f;
    options.eos_ids = source->config.eos_token_ids;
    std::string streamed;
    auto result = generate(model, **cache, *source->tokenizer, ids, options,
                           [&](std::string_view piece) { streamed += piece; });
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_EQ(result->output_ids, c["generated_ids"].get<std::vector<int32_t>>()) << prompt;
    EXPECT_EQ(result->text, c["text"].get<std::string>()) << prompt;
    EXPECT_EQ(streamed, result->text);
  }
}

}  // namespace
}  // namespace zl
