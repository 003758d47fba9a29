// GGUF written by write_gguf reads back (through our reader, which sets the
// interleaved rope llama.cpp's files use) to the same model: the logits of the
// written file equal the dummy model's own forward pass (f32: 1e-5 of the max
// logit, only the summation order of the permuted q/k rows differs; bf16:
// the same bits, so again 1e-5 against the dummy run in bf16). dummy:tiny's
// hidden size (344) is not a multiple of 32, so it has no Q8_0/Q4_0 form;
// the block formats are checked on the llama.cpp side (bench/).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "model/gguf_export.h"
#include "prompt_logits.h"

namespace zl {
namespace {

std::vector<float> prompt_logits(const std::string& spec, const WeightFormat& format) {
  return test::prompt_logits(spec, format, {256, 72, 101, 108, 108, 111, 300, 511});
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float rel) {
  ASSERT_EQ(a.size(), b.size());
  float max_b = 0.0f, worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    max_b = std::max(max_b, std::fabs(b[i]));
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  }
  EXPECT_LE(worst, rel * max_b);
}

TEST(GgufWriterTest, WrittenDummyReadsBackToTheSameLogits) {
  for (const char* dtype : {"f32", "bf16"}) {
    WeightFormat format;
    ASSERT_TRUE(parse_dtype_flag(dtype, format).ok());
    auto source = open_model("dummy:tiny", LoadOptions{"", format});
    ASSERT_TRUE(source.ok());
    auto weights = load_model_weights(*source);
    ASSERT_TRUE(weights.ok());
    std::string path = ::testing::TempDir() + "/tiny." + dtype + ".gguf";
    ASSERT_TRUE(write_gguf(path, source->config, *weights, byte_tokenizer_gguf_vocab(source->config.vocab_size), "tiny").ok());
    auto back = open_model(path);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_TRUE(back->config.rope_interleaved);
    ASSERT_TRUE(back->tokenizer != nullptr) << back->tokenizer_status.to_string();
    expect_close(prompt_logits(path, WeightFormat{}), prompt_logits("dummy:tiny", format), 1e-5f);
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace zl
