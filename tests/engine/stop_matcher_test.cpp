#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

namespace zl {
namespace {

std::string feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.push(p);
  return out + m.flush();
}

TEST(StopMatcherTest, MatchesAcrossPiecesAndDropsTheStop) {
  StopMatcher m({"\n\nUser:"});
  EXPECT_EQ(feed(m, {"Hello", " there\n", "\nUs", "er:", " more"}), "Hello there");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "\n\nUser:");
}

TEST(StopMatcherTest, HoldsBackOnlyPossiblePrefixes) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abcE"), "abc");  // "E" may start "END"
  EXPECT_EQ(m.push("Nx"), "ENx");    // it did not
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.push("EN"), "");
  EXPECT_EQ(m.flush(), "EN");        // released at the end
}

TEST(StopMatcherTest, EarliestStopWins) {
  StopMatcher m({"cd", "b"});
  EXPECT_EQ(m.push("abcd"), "a");
  EXPECT_EQ(m.matched(), "b");
  EXPECT_EQ(m.push("more"), "");
}

TEST(StopMatcherTest, NoStopsPassesThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace zl
