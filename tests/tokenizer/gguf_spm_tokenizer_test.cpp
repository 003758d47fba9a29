// The GGUF "llama" tokenizer on a tiny hand-made vocabulary: merge order by
// score, byte fallback, special and user-defined tokens, unused tokens,
// add_space_prefix, and VocabData validation.
#include "tokenizer/gguf_spm_tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "tokenizer/tokenizer.h"

namespace zl {
namespace {

constexpr int32_t kFirstByte = 3;  // <0x00> .. <0xFF> are ids 3..258

// Ids after the bytes, in order.
enum : int32_t { kSpace = 259, kH, kI, kSpaceH, kHi, kSpaceHi, kX, kY, kXy, kTool };

VocabData tiny_vocab() {
  VocabData v;
  v.model = "llama";
  auto add = [&](const std::string& text, float score, TokenType type) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.token_types.push_back(static_cast<int32_t>(type));
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, 0, TokenType::kByte);
  }
  add("\xE2\x96\x81", -1, TokenType::kNormal);         // ▁
  add("h", -2, TokenType::kNormal);
  add("i", -2, TokenType::kNormal);
  add("\xE2\x96\x81h", -3, TokenType::kNormal);        // ▁h
  add("hi", -1, TokenType::kNormal);
  add("\xE2\x96\x81hi", -0.5, TokenType::kNormal);     // ▁hi
  add("x", -2, TokenType::kNormal);
  add("y", -2, TokenType::kNormal);
  add("xy", 5, TokenType::kUnused);
  add("<tool>", 0, TokenType::kUserDefined);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

std::unique_ptr<Tokenizer> make(const VocabData& v) {
  auto tok = make_tokenizer_from_vocab(v);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(*tok) : nullptr;
}

using Ids = std::vector<int32_t>;

TEST(GgufSpmTokenizerTest, MergesBestScoreFirst) {
  VocabData v = tiny_vocab();
  auto tok = make(v);
  EXPECT_EQ(tok->encode("hi", false), (Ids{kSpaceHi}));
  EXPECT_EQ(tok->encode("hi"), (Ids{1, kSpaceHi}));
  EXPECT_EQ(tok->encode("hi hi", false), (Ids{kSpaceHi, kSpaceHi}));
  v.tokens[kSpaceHi] = "zz";  // no ▁hi: "hi" (-1) beats "▁h" (-3)
  EXPECT_EQ(make(v)->encode("hi", false), (Ids{kSpace, kHi}));
  v.scores[kSpaceH] = 0;  // now "▁h" merges first
  EXPECT_EQ(make(v)->encode("hi", false), (Ids{kSpaceH, kI}));
}

TEST(GgufSpmTokenizerTest, FallsBackToBytes) {
  auto tok = make(tiny_vocab());
  EXPECT_EQ(tok->encode("\xC3\xA9", false), (Ids{kSpace, kFirstByte + 0xC3, kFirstByte + 0xA9}));
  Ids ids = {1, kSpaceHi, kFirstByte + 0xC3, kFirstByte + 0xA9, 2};
  EXPECT_EQ(tok->decode(ids), "hi\xC3\xA9");
  EXPECT_EQ(tok->decode(ids, false), "<s> hi\xC3\xA9</s>");
  EXPECT_EQ(tok->decode(Ids{kFirstByte + 0xC3}), "\xEF\xBF\xBD");
}

TEST(GgufSpmTokenizerTest, SplitsSpecialAndUserDefinedTokens) {
  auto tok = make(tiny_vocab());
  // Control tokens only with parse_special; each following fragment gets the
  // space prefix, as in llama.cpp.
  EXPECT_EQ(tok->encode("<s>hi</s>", false, true), (Ids{1, kSpaceHi, 2}));
  Ids plain = tok->encode("<s>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok->decode(plain), "<s>");
  // User-defined tokens are split out even without parse_special.
  EXPECT_EQ(tok->encode("hi<tool>hi", false, false), (Ids{kSpaceHi, kTool, kSpaceHi}));
  EXPECT_EQ(tok->decode(Ids{kSpaceHi, kTool}), "hi<tool>");
  EXPECT_TRUE(tok->is_special(1));
  EXPECT_TRUE(tok->is_special(0));
  EXPECT_FALSE(tok->is_special(kTool));
}

TEST(GgufSpmTokenizerTest, UnusedTokensAreSplitBack) {
  VocabData v = tiny_vocab();
  v.add_space_prefix = false;
  auto tok = make(v);
  EXPECT_EQ(tok->encode("xy", false), (Ids{kX, kY}));
  EXPECT_EQ(tok->encode("hi", false), (Ids{kHi}));
  EXPECT_EQ(tok->decode(Ids{kSpaceHi}), " hi");  // no prefix to strip
}

TEST(GgufSpmTokenizerTest, ConfigFlags) {
  VocabData v = tiny_vocab();
  v.add_bos = false;
  v.add_eos = true;
  auto tok = make(v);
  EXPECT_EQ(tok->encode("hi"), (Ids{kSpaceHi, 2}));
  EXPECT_EQ(tok->vocab_size(), kTool + 1);
  EXPECT_EQ(tok->token_text(kSpaceHi), "\xE2\x96\x81hi");
  EXPECT_EQ(tok->special_ids().unk, 0);
}

TEST(GgufSpmTokenizerTest, WithoutTokenTypesInfersThem) {
  VocabData v = tiny_vocab();
  v.token_types.clear();
  auto tok = make(v);
  EXPECT_EQ(tok->encode("<s>\xC3\xA9", false, true), (Ids{1, kSpace, kFirstByte + 0xC3, kFirstByte + 0xA9}));
}

TEST(GgufSpmTokenizerTest, StreamDecoderMatchesDecode) {
  auto tok = make(tiny_vocab());
  Ids ids = tok->encode("hi héllo <tool> x hi", true, true);
  for (int rep = 0; rep < 6; ++rep) ids.insert(ids.end(), ids.begin(), ids.end());
  StreamDecoder dec(*tok);
  std::string streamed;
  for (int32_t id : ids) streamed += dec.push(id);
  streamed += dec.flush();
  EXPECT_EQ(streamed, tok->decode(ids));
}

TEST(GgufSpmTokenizerTest, RejectsInvalidVocab) {
  VocabData v = tiny_vocab();
  v.scores.resize(3);
  auto tok = make_spm_tokenizer_from_vocab(v);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("scores"), std::string::npos);
  v = tiny_vocab();
  v.bos_id = 100000;
  tok = make_tokenizer_from_vocab(v);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("bos_id"), std::string::npos);
}

}  // namespace
}  // namespace zl
