#include "tokenizer/utf8_text.h"

#include <gtest/gtest.h>

namespace zl {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8TextTest, SanitizeKeepsValidText) {
  std::string s = "a é 世 🦙";
  EXPECT_EQ(utf8_sanitize(s), s);
}

TEST(Utf8TextTest, SanitizeReplacesMaximalSubparts) {
  // Like Rust's from_utf8_lossy: a truncated sequence is one U+FFFD, a stray
  // continuation byte is one, an overlong lead is one per byte.
  EXPECT_EQ(utf8_sanitize("\xE4\xBD" "a"), kFffd + "a");
  EXPECT_EQ(utf8_sanitize("\x80\x80"), kFffd + kFffd);
  EXPECT_EQ(utf8_sanitize("\xC0\xAF"), kFffd + kFffd);
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(utf8_sanitize("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
}

TEST(Utf8TextTest, CompletePrefixHoldsBackTruncatedChar) {
  EXPECT_EQ(utf8_complete_prefix_len("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix_len("ab\xE4"), 2u);
  EXPECT_EQ(utf8_complete_prefix_len("ab\xE4\xBD"), 2u);
  EXPECT_EQ(utf8_complete_prefix_len("ab\xE4\xBD\xA0"), 5u);
  EXPECT_EQ(utf8_complete_prefix_len("\xF0\x9F\xA6"), 0u);
  // Invalid bytes are not "incomplete": they never become a character.
  EXPECT_EQ(utf8_complete_prefix_len("a\xFF"), 2u);
  EXPECT_EQ(utf8_complete_prefix_len("a\x80"), 2u);
}

TEST(Utf8TextTest, ValidLen) {
  EXPECT_EQ(utf8_valid_len("a", 0), 1u);
  EXPECT_EQ(utf8_valid_len("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8_valid_len("\xC3", 0), 0u);
  EXPECT_EQ(utf8_valid_len("\xA9", 0), 0u);
}

}  // namespace
}  // namespace zl
