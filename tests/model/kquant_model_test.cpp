// Q4_K and Q6_K (and the 32-value Q5_0, Q5_1) on a whole model
// (dummy:llama-110m: every matrix's width is a multiple of 256): quantized
// at load, their logits follow the f32 model as closely as their bits allow
// (Q6_K closer than Q4_0, Q4_K about as close as Q4_0, the 5-bit formats
// closer than Q4_0: a misread nibble, high bit, scale or min would put them
// far beyond),
// and a GGUF file written with them reads back to the same matrices, byte for
// byte (but for q and k, whose rows the writer permutes), and to logits
// within 5% (the tied embedding is stored quantized, while the model
// quantized at load looks up f32 rows).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "model/gguf_export.h"
#include "prompt_logits.h"

namespace zl {
namespace {

constexpr const char* kModel = "dummy:llama-110m";

std::vector<float> prompt_logits(const std::string& spec, const std::string& quantization) {
  WeightFormat format;
  EXPECT_TRUE(parse_quantization_flag(quantization, format).ok());
  return test::prompt_logits(spec, format, {1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203, 29889});
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ||a - b|| / ||b||
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    norm += double{b[i]} * b[i];
  }
  return std::sqrt(diff / norm);
}

TEST(KquantModelTest, LogitsFollowTheF32ModelAsTheirBitsAllow) {
  const std::vector<float> f32 = prompt_logits(kModel, "none");
  const double q4_0 = relative_error(prompt_logits(kModel, "q4_0"), f32);
  const double q4_k = relative_error(prompt_logits(kModel, "q4_k"), f32);
  const double q6_k = relative_error(prompt_logits(kModel, "q6_k"), f32);
  const double q5_0 = relative_error(prompt_logits(kModel, "q5_0"), f32);
  const double q5_1 = relative_error(prompt_logits(kModel, "q5_1"), f32);
  std::printf("relative L2 error of the logits against f32: q4_0 %.4f, q4_k %.4f, q6_k %.4f, q5_0 %.4f, q5_1 %.4f\n",
              q4_0, q4_k, q6_k, q5_0, q5_1);
  EXPECT_LT(q4_0, 0.5);  // the comparison below means something
  EXPECT_LE(q4_k, q4_0 * 1.1);
  EXPECT_LE(q6_k, q4_0 / 2);
  EXPECT_LE(q5_0, q4_0 * 0.75);
  EXPECT_LE(q5_1, q4_0 * 0.75);
}

TEST(KquantModelTest, WrittenGgufReadsBackToTheSameMatrices) {
  for (const char* quantization : {"q4_k", "q6_k", "q5_0", "q5_1"}) {
    WeightFormat format;
    ASSERT_TRUE(parse_quantization_flag(quantization, format).ok());
    auto source = open_model(kModel, LoadOptions{"", format});
    ASSERT_TRUE(source.ok());
    auto weights = load_model_weights(*source);
    ASSERT_TRUE(weights.ok());
    const std::string path = ::testing::TempDir() + "/l110m." + quantization + ".gguf";
    ASSERT_TRUE(write_gguf(path, source->config, *weights, byte_tokenizer_gguf_vocab(source->config.vocab_size),
                           "l110m")
                    .ok());
    auto back_source = open_model(path);
    ASSERT_TRUE(back_source.ok()) << back_source.status().to_string();
    auto back = load_model_weights(*back_source);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    for (size_t l = 0; l < weights->layers.size(); ++l) {
      const LayerWeights &a = weights->layers[l], &b = back->layers[l];
      // (wq and wk are written with their rows permuted for llama.cpp's interleaved rope.)
      for (auto m : {&LayerWeights::wv, &LayerWeights::wo, &LayerWeights::w_gate, &LayerWeights::w_up,
                     &LayerWeights::w_down}) {
        ASSERT_EQ(lower(dtype_name((a.*m).dtype)), quantization);
        ASSERT_EQ((b.*m).dtype, (a.*m).dtype);
        ASSERT_EQ((b.*m).num_bytes(), (a.*m).num_bytes());
        EXPECT_EQ(std::memcmp((b.*m).data, (a.*m).data, static_cast<size_t>((a.*m).num_bytes())), 0)
            << quantization << " layer " << l;
      }
    }
    const double err = relative_error(prompt_logits(path, "none"), prompt_logits(kModel, quantization));
    EXPECT_LT(err, 0.05) << quantization;
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace zl
