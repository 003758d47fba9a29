#include <gtest/gtest.h>

#include <vector>

#include "tokenizer/tokenizer.h"

namespace zl {
namespace {

TEST(ByteTokenizerTest, EncodesBytesWithBos) {
  auto tok = make_byte_tokenizer(300);
  EXPECT_EQ(tok->vocab_size(), 300);
  std::vector<int32_t> want = {256, 'h', 'i', 0xC3, 0xA9};
  EXPECT_EQ(tok->encode("hi\xC3\xA9"), want);
  EXPECT_EQ(tok->encode("hi", /*add_special=*/false), (std::vector<int32_t>{'h', 'i'}));
  EXPECT_EQ(tok->special_ids().bos, 256);
  EXPECT_EQ(tok->special_ids().eos, 257);
  EXPECT_TRUE(tok->special_ids().add_bos);
  EXPECT_FALSE(tok->special_ids().add_eos);
}

TEST(ByteTokenizerTest, ParsesSpecialTokensOnlyWhenAsked) {
  auto tok = make_byte_tokenizer(258);
  EXPECT_EQ(tok->encode("a</s><s>", false, true), (std::vector<int32_t>{'a', 257, 256}));
  std::vector<int32_t> plain = tok->encode("<s>", false, false);
  EXPECT_EQ(plain, (std::vector<int32_t>{'<', 's', '>'}));
  // <t{id}> tokens are not parsed from text.
  EXPECT_EQ(tok->encode("<t300>", false, true).size(), 6u);
}

TEST(ByteTokenizerTest, DecodesAndSkipsSpecials) {
  auto tok = make_byte_tokenizer(300);
  std::vector<int32_t> ids = {256, 'o', 'k', 299, 257, -1, 300};
  EXPECT_EQ(tok->decode(ids), "ok<t299>");
  EXPECT_EQ(tok->decode(ids, /*skip_special=*/false), "<s>ok<t299></s>");
}

TEST(ByteTokenizerTest, RoundTripsAnyUtf8) {
  auto tok = make_byte_tokenizer(512);
  std::string text = "Grüße, 世界! 🦙 <s>";
  EXPECT_EQ(tok->decode(tok->encode(text, true, false)), text);
}

TEST(ByteTokenizerTest, InvalidUtf8BecomesReplacementChar) {
  auto tok = make_byte_tokenizer(258);
  std::vector<int32_t> ids = {'a', 0xFF, 0xE4, 0xBD, 'b'};
  EXPECT_EQ(tok->decode(ids), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
}

TEST(ByteTokenizerTest, TokenTextAndSpecialFlags) {
  auto tok = make_byte_tokenizer(260);
  EXPECT_EQ(tok->token_text(0x41), "<0x41>");
  EXPECT_EQ(tok->token_text(256), "<s>");
  EXPECT_EQ(tok->token_text(257), "</s>");
  EXPECT_EQ(tok->token_text(259), "<t259>");
  EXPECT_EQ(tok->token_text(260), "");
  EXPECT_TRUE(tok->is_special(256));
  EXPECT_TRUE(tok->is_special(257));
  EXPECT_FALSE(tok->is_special(258));
  EXPECT_FALSE(tok->is_special(65));
  EXPECT_FALSE(tok->describe().empty());
}

}  // namespace
}  // namespace zl
