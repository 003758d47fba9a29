// MsgpackWriter: each value in the smallest form the MessagePack spec allows,
// at the boundaries between forms.
#include "core/msgpack.h"

#include <gtest/gtest.h>

#include <string>

namespace zl {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

template <typename Write>
std::string encoded(Write write) {
  MsgpackWriter w;
  write(w);
  return hex(w.bytes());
}

TEST(Msgpack, IntegersTakeTheirSmallestForm) {
  EXPECT_EQ(encoded([](auto& w) { w.uint(0); }), "00");
  EXPECT_EQ(encoded([](auto& w) { w.uint(127); }), "7f");
  EXPECT_EQ(encoded([](auto& w) { w.uint(128); }), "cc80");
  EXPECT_EQ(encoded([](auto& w) { w.uint(256); }), "cd0100");
  EXPECT_EQ(encoded([](auto& w) { w.uint(65536); }), "ce00010000");
  EXPECT_EQ(encoded([](auto& w) { w.uint(1ull << 32); }), "cf0000000100000000");
  EXPECT_EQ(encoded([](auto& w) { w.integer(-1); }), "ff");
  EXPECT_EQ(encoded([](auto& w) { w.integer(-32); }), "e0");
  EXPECT_EQ(encoded([](auto& w) { w.integer(-33); }), "d0df");
  EXPECT_EQ(encoded([](auto& w) { w.integer(-129); }), "d1ff7f");
  EXPECT_EQ(encoded([](auto& w) { w.integer(-32769); }), "d2ffff7fff");
  EXPECT_EQ(encoded([](auto& w) { w.integer(INT64_MIN); }), "d38000000000000000");
  EXPECT_EQ(encoded([](auto& w) { w.integer(300); }), "cd012c");
}

TEST(Msgpack, StringsBinariesAndContainers) {
  EXPECT_EQ(encoded([](auto& w) { w.str("type"); }), "a474797065");
  EXPECT_EQ(encoded([](auto& w) { w.str(std::string(31, 'a')); }).substr(0, 2), "bf");
  EXPECT_EQ(encoded([](auto& w) { w.str(std::string(32, 'a')); }).substr(0, 4), "d920");
  EXPECT_EQ(encoded([](auto& w) { w.str(std::string(256, 'a')); }).substr(0, 6), "da0100");
  EXPECT_EQ(encoded([](auto& w) { w.bin("\x01\x02", 2); }), "c4020102");
  EXPECT_EQ(encoded([](auto& w) { w.array(15); }), "9f");
  EXPECT_EQ(encoded([](auto& w) { w.array(16); }), "dc0010");
  EXPECT_EQ(encoded([](auto& w) { w.map(2); }), "82");
  EXPECT_EQ(encoded([](auto& w) { w.map(70000); }), "df00011170");
  EXPECT_EQ(encoded([](auto& w) { w.nil(); }), "c0");
  EXPECT_EQ(encoded([](auto& w) { w.boolean(true); }), "c3");
  EXPECT_EQ(encoded([](auto& w) { w.float64(1.5); }), "cb3ff8000000000000");
}

}  // namespace
}  // namespace zl
