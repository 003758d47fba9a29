// Reads the real stories260K.gguf from ../shared (llama2.c's 260K-parameter
// TinyStories model converted by llama.cpp): shapes, config and vocabulary.
#include <gtest/gtest.h>

#include "bundle/gguf_vocab.h"
#include "model/gguf.h"
#include "test_util.h"

namespace zl {
namespace {

std::string stories_path() {
  std::string path = test::shared_path("models/stories260K.gguf");
  if (path.empty() || !file_exists(path)) return "";
  return path;
}

TEST(GgufModelTest, Stories260KConfig) {
  std::string path = stories_path();
  if (path.empty()) GTEST_SKIP() << "shared/models/stories260K.gguf not found";
  StatusOr<GgufFile> g = read_gguf(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->version, 3u);
  StatusOr<ModelConfig> c = gguf_model_config(*g);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "llama");
  EXPECT_EQ(c->num_layers, 5);
  EXPECT_EQ(c->dim, 64);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->hidden_dim, 172);
  EXPECT_EQ(c->vocab_size, 512);
  EXPECT_EQ(c->max_seq_len, 128);  // the converter's default, not the trained 512
  EXPECT_TRUE(c->rope_interleaved);
  EXPECT_FALSE(c->tie_word_embeddings);  // the converter writes output.weight
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2}));
  EXPECT_NEAR(c->rms_norm_eps, 1e-5f, 1e-9f);
}

TEST(GgufModelTest, Stories260KTensors) {
  std::string path = stories_path();
  if (path.empty()) GTEST_SKIP() << "shared/models/stories260K.gguf not found";
  StatusOr<GgufFile> g = read_gguf(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->tensors.size(), 3u + 5u * 9u);
  auto shape_of = [&](const std::string& name) {
    auto it = g->tensors.find(name);
    EXPECT_NE(it, g->tensors.end()) << name;
    if (it == g->tensors.end()) return std::vector<int64_t>{};
    EXPECT_EQ(it->second.dtype, DType::kF32) << name;
    return it->second.shape;
  };
  using S = std::vector<int64_t>;
  EXPECT_EQ(shape_of("token_embd.weight"), (S{512, 64}));
  EXPECT_EQ(shape_of("output.weight"), (S{512, 64}));
  EXPECT_EQ(shape_of("output_norm.weight"), (S{64}));
  for (int layer = 0; layer < 5; ++layer) {
    std::string p = "blk." + std::to_string(layer) + ".";
    EXPECT_EQ(shape_of(p + "attn_q.weight"), (S{64, 64}));
    EXPECT_EQ(shape_of(p + "attn_k.weight"), (S{32, 64}));
    EXPECT_EQ(shape_of(p + "attn_v.weight"), (S{32, 64}));
    EXPECT_EQ(shape_of(p + "attn_output.weight"), (S{64, 64}));
    EXPECT_EQ(shape_of(p + "attn_norm.weight"), (S{64}));
    EXPECT_EQ(shape_of(p + "ffn_gate.weight"), (S{172, 64}));
    EXPECT_EQ(shape_of(p + "ffn_up.weight"), (S{172, 64}));
    EXPECT_EQ(shape_of(p + "ffn_down.weight"), (S{64, 172}));
    EXPECT_EQ(shape_of(p + "ffn_norm.weight"), (S{64}));
  }
}

TEST(GgufModelTest, Stories260KVocab) {
  std::string path = stories_path();
  if (path.empty()) GTEST_SKIP() << "shared/models/stories260K.gguf not found";
  StatusOr<GgufFile> g = read_gguf(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  StatusOr<VocabData> v = gguf_vocab(*g);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->model, "llama");
  ASSERT_EQ(v->tokens.size(), 512u);
  EXPECT_EQ(v->scores.size(), 512u);
  EXPECT_EQ(v->token_types.size(), 512u);
  EXPECT_EQ(v->tokens[0], "<unk>");
  EXPECT_EQ(v->tokens[1], "<s>");
  EXPECT_EQ(v->tokens[2], "</s>");
  EXPECT_EQ(v->tokens[3], "<0x00>");
  EXPECT_EQ(v->token_types[0], static_cast<int32_t>(TokenType::kUnknown));
  EXPECT_EQ(v->token_types[1], static_cast<int32_t>(TokenType::kControl));
  EXPECT_EQ(v->token_types[3], static_cast<int32_t>(TokenType::kByte));
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_EQ(v->pad_id, -1);
  EXPECT_TRUE(v->merges.empty());
}

}  // namespace
}  // namespace zl
