#include <gtest/gtest.h>

#include "core/log.h"

namespace zl {
namespace {

// At most one line a period, the first at once, and the next one written
// says how many were left out in between.
TEST(LogLimiterTest, OneLineAPeriodCountingWhatItLeftOut) {
  LogLimiter limiter(1000);
  int64_t left_out = -1;
  EXPECT_TRUE(limiter.allow(5, &left_out));
  EXPECT_EQ(left_out, 0);
  for (uint64_t t = 6; t < 1005; t += 100) EXPECT_FALSE(limiter.allow(t, &left_out));
  EXPECT_TRUE(limiter.allow(1005, &left_out));
  EXPECT_EQ(left_out, 10);
  EXPECT_FALSE(limiter.allow(2004, &left_out));
  EXPECT_TRUE(limiter.allow(2005, &left_out));
  EXPECT_EQ(left_out, 1);
}

}  // namespace
}  // namespace zl
