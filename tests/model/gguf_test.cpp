#include "model/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "bundle/gguf_vocab.h"
#include "core/dtype.h"
#include "model/gguf_writer.h"
#include "model/rewrite_file.h"
#include "test_util.h"

namespace zl {
namespace {

using test::GgufWriter;

// Metadata for a tiny model of `arch`: dim 8, 1 layer, 2 heads (of 4), 1
// kv head, vocab 4, rope over rope_dims of each head.
void add_llama_metadata(GgufWriter& w, const std::string& arch = "llama", uint32_t rope_dims = 4) {
  w.add_string("general.architecture", arch);
  w.add_string("general.name", "tiny");
  w.add_u32(arch + ".context_length", 32);
  w.add_u32(arch + ".embedding_length", 8);
  w.add_u32(arch + ".block_count", 1);
  w.add_u32(arch + ".feed_forward_length", 16);
  w.add_u32(arch + ".attention.head_count", 2);
  w.add_u32(arch + ".attention.head_count_kv", 1);
  w.add_u32(arch + ".rope.dimension_count", rope_dims);
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
  w.add_f32_array("tokenizer.ggml.scores", {0.0f, 0.0f, 0.0f, -1.5f});
  w.add_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1});
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_u32("tokenizer.ggml.padding_token_id", 0xffffffffu);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
}

std::vector<float> iota(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

GgufWriter tiny_llama() {
  GgufWriter w;
  add_llama_metadata(w);
  w.add_f32_tensor("token_embd.weight", {8, 4}, iota(32));
  w.add_f32_tensor("output_norm.weight", {8}, iota(8));
  w.add_tensor("blk.0.attn_q.weight", {32, 2}, 8, std::string(2 * 34, '\1'));  // Q8_0
  w.add_tensor("blk.0.ffn_up.weight", {2, 3}, 1, std::string(12, '\0'));        // F16
  return w;
}

std::string write(const std::string& name, const std::string& bytes) {
  return test::write_temp_file("gguf/" + name, bytes);
}

// Reads `bytes` and returns the error message, checking its code and that it
// names the file.
std::string error_of(const std::string& name, const std::string& bytes, StatusCode code) {
  std::string path = write(name, bytes);
  StatusOr<GgufFile> g = read_gguf(path);
  EXPECT_FALSE(g.ok());
  if (g.ok()) return "";
  EXPECT_EQ(g.status().code(), code) << g.status().to_string();
  EXPECT_NE(g.status().message().find(name), std::string::npos) << g.status().message();
  return g.status().message();
}

TEST(GgufTest, ReadsMetadataAndTensors) {
  StatusOr<GgufFile> g = read_gguf(write("tiny.gguf", tiny_llama().build()));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->version, 3u);
  EXPECT_EQ(g->alignment, 32u);
  EXPECT_EQ(g->data_offset % 32, 0u);
  EXPECT_EQ(*g->find("general.name")->as_string(), "tiny");
  EXPECT_EQ(g->find("llama.block_count")->type, GgufType::kU32);
  EXPECT_EQ(g->find("llama.block_count")->as_int(), 1);
  EXPECT_FLOAT_EQ(*g->find("llama.attention.layer_norm_rms_epsilon")->as_float(), 1e-5f);
  EXPECT_EQ(g->find("tokenizer.ggml.tokens")->size(), 4u);
  EXPECT_EQ(g->find("nope"), nullptr);
  ASSERT_EQ(g->tensors.size(), 4u);
  const TensorInfo& embd = g->tensors.at("token_embd.weight");
  EXPECT_EQ(embd.shape, (std::vector<int64_t>{4, 8}));  // ne reversed
  EXPECT_EQ(embd.dtype, DType::kF32);
  EXPECT_EQ(embd.num_bytes, 128u);
  float x;
  std::memcpy(&x, embd.data + 4 * 9, 4);
  EXPECT_EQ(x, 9.0f);
  const TensorInfo& q = g->tensors.at("blk.0.attn_q.weight");
  EXPECT_EQ(q.dtype, DType::kQ8_0);
  EXPECT_EQ(q.shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(q.num_bytes, 68u);
  EXPECT_EQ(q.data[0], 1);
  EXPECT_EQ(g->tensors.at("blk.0.ffn_up.weight").dtype, DType::kF16);
  EXPECT_EQ(g->tensors.at("output_norm.weight").shape, (std::vector<int64_t>{8}));
}

TEST(GgufTest, ModelConfigAndVocab) {
  StatusOr<GgufFile> g = read_gguf(write("tiny_cfg.gguf", tiny_llama().build()));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  StatusOr<ModelConfig> c = gguf_model_config(*g);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "llama");
  EXPECT_EQ(c->source_arch, "llama");
  EXPECT_EQ(c->dim, 8);
  EXPECT_EQ(c->num_layers, 1);
  EXPECT_EQ(c->num_heads, 2);
  EXPECT_EQ(c->num_kv_heads, 1);
  EXPECT_EQ(c->head_dim, 4);
  EXPECT_EQ(c->hidden_dim, 16);
  EXPECT_EQ(c->max_seq_len, 32);
  EXPECT_EQ(c->vocab_size, 4);
  EXPECT_FLOAT_EQ(c->rope_theta, 10000.0f);
  EXPECT_TRUE(c->rope_interleaved);
  EXPECT_TRUE(c->tie_word_embeddings);  // no output.weight
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_EQ(c->bos_token_id, 1);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int32_t>{2}));

  StatusOr<VocabData> v = gguf_vocab(*g);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->model, "llama");
  EXPECT_EQ(v->tokens, (std::vector<std::string>{"<unk>", "<s>", "</s>", "a"}));
  EXPECT_EQ(v->scores, (std::vector<float>{0.0f, 0.0f, 0.0f, -1.5f}));
  EXPECT_EQ(v->token_types, (std::vector<int32_t>{2, 3, 3, 1}));
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_EQ(v->pad_id, -1);  // 0xFFFFFFFF
  EXPECT_EQ(v->add_bos, true);
  EXPECT_FALSE(v->add_eos.has_value());
}

TEST(GgufTest, Qwen2AndVersion2AndAlignment) {
  GgufWriter w;
  w.version = 2;
  w.alignment = 64;
  w.add_u32("general.alignment", 64);
  w.add_string("general.architecture", "qwen2");
  for (auto [key, value] : {std::pair{"qwen2.context_length", 64}, {"qwen2.embedding_length", 16},
                            {"qwen2.block_count", 2}, {"qwen2.feed_forward_length", 32},
                            {"qwen2.attention.head_count", 2}, {"qwen2.vocab_size", 10}})
    w.add_u32(key, value);
  w.add_f32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
  w.add_f32("qwen2.rope.freq_base", 1e6f);
  w.add_string("qwen2.rope.scaling.type", "none");
  w.add_f32_tensor("a", {16}, iota(16));
  w.add_f32_tensor("output.weight", {16, 10}, iota(160));
  w.add_f32_tensor("blk.0.attn_q.bias", {16}, iota(16));  // biases are named by their presence
  StatusOr<GgufFile> g = read_gguf(write("qwen2.gguf", w.build()));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->alignment, 64u);
  EXPECT_EQ(g->data_offset % 64, 0u);
  EXPECT_EQ(g->tensors.at("output.weight").data - g->file->data(), static_cast<ptrdiff_t>(g->data_offset + 64));
  StatusOr<ModelConfig> c = gguf_model_config(*g);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "qwen2");
  EXPECT_FALSE(c->rope_interleaved);
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->o_bias);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_EQ(c->vocab_size, 10);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_FLOAT_EQ(c->rope_theta, 1e6f);
  EXPECT_EQ(c->bos_token_id, -1);
  StatusOr<VocabData> v = gguf_vocab(*g);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("tokenizer.ggml.model"), std::string::npos);
}

TEST(GgufTest, MissingFile) {
  StatusOr<GgufFile> g = read_gguf(test::temp_dir() + "/gguf/absent.gguf");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
  EXPECT_NE(g.status().message().find("absent.gguf"), std::string::npos);
}

TEST(GgufTest, EveryTruncationFails) {
  std::string bytes = tiny_llama().build();
  std::string path = write("trunc.gguf", "");
  for (size_t len = 0; len < bytes.size(); ++len) {
    ASSERT_TRUE(test::rewrite_file(path, bytes.substr(0, len)));
    StatusOr<GgufFile> g = read_gguf(path);
    ASSERT_FALSE(g.ok()) << "length " << len << " of " << bytes.size();
    EXPECT_NE(g.status().message().find("trunc.gguf"), std::string::npos);
  }
}

TEST(GgufTest, BadHeader) {
  GgufWriter w = tiny_llama();
  w.magic = "GGUX";
  EXPECT_NE(error_of("magic.gguf", w.build(), StatusCode::kDataLoss).find("magic"), std::string::npos);
  w = tiny_llama();
  w.version = 1;
  EXPECT_NE(error_of("v1.gguf", w.build(), StatusCode::kUnimplemented).find("version 1"), std::string::npos);
  w.version = 3u << 24;
  EXPECT_NE(error_of("be.gguf", w.build(), StatusCode::kUnimplemented).find("big-endian"), std::string::npos);
  w = tiny_llama();
  w.num_kv_override = 1ull << 40;
  EXPECT_NE(error_of("nkv.gguf", w.build(), StatusCode::kDataLoss).find("metadata count"), std::string::npos);
  w = tiny_llama();
  w.num_tensors_override = 1ull << 62;
  EXPECT_NE(error_of("nt.gguf", w.build(), StatusCode::kDataLoss).find("tensor count"), std::string::npos);
  w = tiny_llama();
  w.num_tensors_override = 5;  // one more than there are: reads data as a tensor info
  error_of("nt5.gguf", w.build(), StatusCode::kDataLoss);
}

TEST(GgufTest, HugeStringLengthAndArrayCount) {
  GgufWriter w;
  w.add_raw("general.name", GgufWriter::kString, GgufWriter::le<uint64_t>(1ull << 40) + "abc");
  std::string msg = error_of("hugestr.gguf", w.build(), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("general.name"), std::string::npos);
  EXPECT_NE(msg.find("length"), std::string::npos);
  GgufWriter w2;
  w2.add_raw("tokenizer.ggml.tokens", GgufWriter::kArray,
             GgufWriter::le<uint32_t>(GgufWriter::kString) + GgufWriter::le<uint64_t>(1ull << 50));
  msg = error_of("hugearr.gguf", w2.build(), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("tokenizer.ggml.tokens"), std::string::npos);
  EXPECT_NE(msg.find("array count"), std::string::npos);
  GgufWriter w3;
  w3.add_raw("k", GgufWriter::kArray, GgufWriter::le<uint32_t>(GgufWriter::kArray) + GgufWriter::le<uint64_t>(0));
  EXPECT_NE(error_of("nested.gguf", w3.build(), StatusCode::kDataLoss).find("nested"), std::string::npos);
  GgufWriter w4;
  w4.add_raw("k", 13, "");
  EXPECT_NE(error_of("badtype.gguf", w4.build(), StatusCode::kDataLoss).find("invalid type"), std::string::npos);
  GgufWriter w5;
  w5.add_raw("flag", GgufWriter::kBool, std::string(1, '\2'));
  EXPECT_NE(error_of("bool.gguf", w5.build(), StatusCode::kDataLoss).find("flag"), std::string::npos);
  GgufWriter w6;
  w6.add_u32("k", 1);
  w6.add_u32("k", 2);
  EXPECT_NE(error_of("dupkey.gguf", w6.build(), StatusCode::kDataLoss).find("duplicate"), std::string::npos);
}

// Q5_0 (ggml type 6, 22-byte blocks) and Q5_1 (type 7, 24 bytes): sizes and
// values as stored. A block: f16 d, (Q5_1: f16 m,) u32 qh, 16 bytes qs.
TEST(GgufTest, ReadsQ5Tensors) {
  const std::string qh = GgufWriter::le<uint32_t>(0x80000001u), qs = std::string(15, '\x21') + "\xf0";
  // Element 0: low nibble 1 under qh bit 0 -> 17; element 15: 0 -> 0;
  // element 16: 2 -> 2; element 31: 15 under qh bit 31 -> 31.
  const std::string q5_0_block = GgufWriter::le<uint16_t>(0x3c00) + qh + qs;  // d = 1
  const std::string q5_1_block =
      GgufWriter::le<uint16_t>(0x4000) + GgufWriter::le<uint16_t>(0xbc00) + qh + qs;  // d = 2, m = -1
  GgufWriter w;
  std::string q5_0_data, q5_1_data;
  for (int i = 0; i < 3 * 2; ++i) q5_0_data += q5_0_block;
  for (int i = 0; i < 2; ++i) q5_1_data += q5_1_block;
  w.add_tensor("a", {64, 3}, 6, q5_0_data);
  w.add_tensor("b", {32, 2}, 7, q5_1_data);
  StatusOr<GgufFile> g = read_gguf(write("q5.gguf", w.build()));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const TensorInfo& a = g->tensors.at("a");
  EXPECT_EQ(a.dtype, DType::kQ5_0);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 64}));
  EXPECT_EQ(a.num_bytes, 6u * 22);
  const TensorInfo& b = g->tensors.at("b");
  EXPECT_EQ(b.dtype, DType::kQ5_1);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(b.num_bytes, 2u * 24);
  std::vector<float> va(32), vb(32);
  dtype_to_f32(a.dtype, a.data + 5 * 22, va.data(), 32);  // the last block
  dtype_to_f32(b.dtype, b.data + 24, vb.data(), 32);
  EXPECT_EQ(va[0], 1.0f);    // (17 - 16) * 1
  EXPECT_EQ(va[15], -16.0f);
  EXPECT_EQ(va[16], -14.0f);
  EXPECT_EQ(va[31], 15.0f);
  EXPECT_EQ(vb[0], 33.0f);   // 17 * 2 - 1
  EXPECT_EQ(vb[15], -1.0f);
  EXPECT_EQ(vb[16], 3.0f);
  EXPECT_EQ(vb[31], 61.0f);

  // Rows of whole blocks; the data must hold every block.
  GgufWriter half;
  half.add_tensor("w", {48, 2}, 6, std::string(128, '\0'));
  EXPECT_NE(error_of("q5row.gguf", half.build(), StatusCode::kDataLoss).find("multiple of the Q5_0 block size 32"),
            std::string::npos);
  GgufWriter short_data;
  short_data.add_tensor("w", {32, 4}, 7, std::string(24, '\0'));
  EXPECT_NE(error_of("q5short.gguf", short_data.build(), StatusCode::kDataLoss).find("past the data section"),
            std::string::npos);
}

// The k-quants Q2_K, Q3_K, Q5_K (ggml types 10, 11, 13) and IQ4_XS (23) in
// super-blocks of 256, IQ4_NL (20) in blocks of 32: sizes as ggml's; values:
// tests/core/kquant_dtype_test.cpp.
TEST(GgufTest, ReadsKquantAndIq4Tensors) {
  struct Case { uint32_t type; DType dtype; uint64_t bytes_per_256; };
  const Case cases[] = {{10, DType::kQ2_K, 84}, {11, DType::kQ3_K, 110}, {13, DType::kQ5_K, 176},
                        {20, DType::kIQ4_NL, 8 * 18}, {23, DType::kIQ4_XS, 136}};
  for (const Case& c : cases) {
    GgufWriter w;
    w.add_tensor("w", {512, 3}, c.type, std::string(6 * c.bytes_per_256, '\0'));
    StatusOr<GgufFile> g = read_gguf(write("kq.gguf", w.build()));
    ASSERT_TRUE(g.ok()) << c.type << ": " << g.status().to_string();
    const TensorInfo& t = g->tensors.at("w");
    EXPECT_EQ(t.dtype, c.dtype) << c.type;
    EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 512})) << c.type;
    EXPECT_EQ(t.num_bytes, 6 * c.bytes_per_256) << c.type;
    GgufWriter row;  // a row that is not whole blocks
    row.add_tensor("w", {c.type == 20 ? 48u : 128u, 2}, c.type, std::string(1024, '\0'));
    EXPECT_NE(error_of("kqrow.gguf", row.build(), StatusCode::kDataLoss).find("multiple of"), std::string::npos)
        << c.type;
  }
}

TEST(GgufTest, BadTensorInfos) {
  GgufWriter w;
  w.add_tensor("blk.0.attn_k.weight", {256, 2}, 16, std::string(132, '\0'));
  std::string msg = error_of("iq2xxs.gguf", w.build(), StatusCode::kUnimplemented);
  EXPECT_NE(msg.find("blk.0.attn_k.weight"), std::string::npos);
  EXPECT_NE(msg.find("IQ2_XXS"), std::string::npos);
  EXPECT_NE(msg.find("Q4_0, Q5_0, Q5_1, Q2_K"), std::string::npos) << msg;  // the supported types

  struct Case { const char* file; std::vector<uint64_t> ne; uint32_t type; const char* expect; };
  const Case cases[] = {
      {"dim0.gguf", {4, 0}, 0, "dimension 0"},
      {"dims5.gguf", {1, 1, 1, 1, 1}, 0, "5 dims"},
      {"qrow.gguf", {16, 2}, 8, "multiple of"},
      {"q4krow.gguf", {32, 2}, 12, "multiple of"},  // k-quant rows are whole super-blocks of 256
      {"overflow.gguf", {1ull << 32, 1ull << 32}, 0, "overflow"},
      {"big.gguf", {1ull << 20}, 0, "past the data section"},
  };
  for (const Case& c : cases) {
    GgufWriter t;
    t.add_tensor("w", c.ne, c.type, std::string(64, '\0'));
    msg = error_of(c.file, t.build(), StatusCode::kDataLoss);
    EXPECT_NE(msg.find("tensor w"), std::string::npos) << c.file << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.file << ": " << msg;
  }
}

TEST(GgufTest, LyingOffsets) {
  GgufWriter w = tiny_llama();
  w.add_f32_tensor("extra", {4}, iota(4)).offset = 1ull << 40;
  std::string msg = error_of("far.gguf", w.build(), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("tensor extra"), std::string::npos);
  w = tiny_llama();
  w.add_f32_tensor("extra", {4}, iota(4)).offset = UINT64_MAX - 31;  // offset + bytes wraps
  EXPECT_NE(error_of("wrap.gguf", w.build(), StatusCode::kDataLoss).find("tensor extra"), std::string::npos);
  w = tiny_llama();
  w.add_f32_tensor("extra", {4}, iota(4)).offset = 4;
  msg = error_of("misaligned.gguf", w.build(), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("alignment"), std::string::npos);
  w = tiny_llama();
  w.add_f32_tensor("extra", {4}, iota(4)).offset = 96;  // inside token_embd.weight
  msg = error_of("overlap.gguf", w.build(), StatusCode::kDataLoss);
  EXPECT_NE(msg.find("overlaps"), std::string::npos);
  EXPECT_NE(msg.find("token_embd.weight"), std::string::npos);
  w = tiny_llama();
  w.add_f32_tensor("token_embd.weight", {4}, iota(4));
  EXPECT_NE(error_of("duptensor.gguf", w.build(), StatusCode::kDataLoss).find("duplicate tensor"), std::string::npos);
  w = tiny_llama();
  w.add_u32("general.alignment", 24);
  EXPECT_NE(error_of("align24.gguf", w.build(), StatusCode::kDataLoss).find("general.alignment"), std::string::npos);
}

TEST(GgufTest, ConfigErrorsNameKeys) {
  auto config_error = [](const std::string& name, GgufWriter& w, StatusCode code) {
    StatusOr<GgufFile> g = read_gguf(write(name, w.build()));
    EXPECT_TRUE(g.ok()) << g.status().to_string();
    if (!g.ok()) return std::string();
    StatusOr<ModelConfig> c = gguf_model_config(*g);
    EXPECT_FALSE(c.ok());
    if (c.ok()) return std::string();
    EXPECT_EQ(c.status().code(), code) << c.status().to_string();
    EXPECT_NE(c.status().message().find(name), std::string::npos);
    return c.status().message();
  };
  GgufWriter w;
  w.add_string("general.architecture", "mamba");
  EXPECT_NE(config_error("mamba.gguf", w, StatusCode::kUnimplemented).find("mamba"), std::string::npos);
  GgufWriter w2;
  add_llama_metadata(w2);
  w2.add_string("llama.rope.scaling.type", "yarn");
  EXPECT_NE(config_error("yarn.gguf", w2, StatusCode::kUnimplemented).find("yarn"), std::string::npos);
  GgufWriter w3;
  w3.add_string("general.architecture", "llama");
  w3.add_string("llama.context_length", "long");
  EXPECT_NE(config_error("ctxstr.gguf", w3, StatusCode::kDataLoss).find("llama.context_length"), std::string::npos);
  GgufWriter w4;
  w4.add_string("general.architecture", "llama");
  EXPECT_NE(config_error("noctx.gguf", w4, StatusCode::kDataLoss).find("llama.context_length"), std::string::npos);
  GgufWriter w5;
  add_llama_metadata(w5);
  w5.add_u32("llama.attention.key_length", 2);  // fewer than rope's 4 dimensions
  EXPECT_NE(config_error("rope_dims.gguf", w5, StatusCode::kDataLoss).find("rope.dimension_count"), std::string::npos);
  GgufWriter partial;
  add_llama_metadata(partial);
  partial.add_u32("llama.attention.key_length", 8);  // rope turns the first 4 of 8 (as llama.cpp's n_rot)
  StatusOr<ModelConfig> rotary = gguf_model_config(*read_gguf(write("partial.gguf", partial.build())));
  ASSERT_TRUE(rotary.ok()) << rotary.status().to_string();
  EXPECT_EQ(rotary->head_dim, 8);
  EXPECT_EQ(rotary->rope_dim(), 4);
  GgufWriter w6;
  w6.add_string("general.architecture", "llama");
  w6.add_u32("llama.context_length", 1);
  w6.add_u32("llama.embedding_length", 8);
  w6.add_u32("llama.block_count", 1);
  w6.add_u32("llama.feed_forward_length", 8);
  w6.add_u32("llama.attention.head_count", 0);
  w6.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  EXPECT_NE(config_error("heads0.gguf", w6, StatusCode::kDataLoss).find("head_count"), std::string::npos);
}

// Random byte flips of a valid file must give ok or an error, never a crash
// (run under ASan/UBSan to catch bad reads).
TEST(GgufTest, RandomByteFlipsNeverCrash) {
  const std::string bytes = tiny_llama().build();
  const std::string path = write("fuzz.gguf", bytes);
  std::mt19937 rng(1234);
  int num_ok = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string mutated = bytes;
    int num_flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < num_flips; ++i) {
      // Favour the header, where the structure lives.
      size_t limit = (rng() % 4 == 0) ? mutated.size() : std::min<size_t>(mutated.size(), 700);
      mutated[rng() % limit] = static_cast<char>(rng() & 0xff);
    }
    ASSERT_TRUE(test::rewrite_file(path, mutated));
    StatusOr<GgufFile> g = read_gguf(path);
    if (!g.ok()) continue;
    ++num_ok;
    (void)gguf_model_config(*g);
    (void)gguf_vocab(*g);
  }
  EXPECT_GT(num_ok, 0);
}

}  // namespace
}  // namespace zl

namespace zl {
namespace {

// Phi-3 as llama.cpp's converter writes it: LongRoPE factors as tensors,
// their attention factor and original context as keys, a partial rotary
// dimension.
GgufWriter phi3_metadata(size_t num_factors) {
  GgufWriter w;
  add_llama_metadata(w, "phi3", 2);
  w.add_u32("phi3.rope.scaling.original_context_length", 16);
  w.add_f32("phi3.rope.scaling.attn_factor", 1.25f);
  w.add_u32("phi3.attention.sliding_window", 0);
  w.add_f32_tensor("rope_factors_long.weight", {num_factors}, std::vector<float>(num_factors, 4.0f));
  w.add_f32_tensor("rope_factors_short.weight", {num_factors}, std::vector<float>(num_factors, 1.5f));
  return w;
}

TEST(GgufTest, Phi3ReadsLongRopeFactorsFromTensors) {
  GgufWriter w = phi3_metadata(1);
  StatusOr<GgufFile> g = read_gguf(write("phi3.gguf", w.build()));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  StatusOr<ModelConfig> c = gguf_model_config(*g);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "phi3");
  EXPECT_EQ(c->head_dim, 4);
  EXPECT_EQ(c->rope_dim(), 2);
  EXPECT_FALSE(c->rope_interleaved);
  EXPECT_EQ(c->sliding_window, 0);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLongRope);
  EXPECT_EQ(c->rope_scaling.long_factor, std::vector<float>{4.0f});
  EXPECT_EQ(c->rope_scaling.short_factor, std::vector<float>{1.5f});
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 16);
  EXPECT_EQ(c->rope_scaling.attention_factor, 1.25f);

  GgufWriter bad = phi3_metadata(3);  // rope turns 2 dimensions: 1 factor each
  StatusOr<GgufFile> g2 = read_gguf(write("phi3_factors.gguf", bad.build()));
  ASSERT_TRUE(g2.ok());
  StatusOr<ModelConfig> c2 = gguf_model_config(*g2);
  ASSERT_FALSE(c2.ok());
  EXPECT_NE(c2.status().message().find("rope_factors_long.weight"), std::string::npos) << c2.status().to_string();
}

}  // namespace
}  // namespace zl
