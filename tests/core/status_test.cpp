#include "zerolayer/status.h"

#include <gtest/gtest.h>

namespace zl {
namespace {

StatusOr<int> parse_positive(int x) {
  if (x <= 0) return invalid_argument("x must be positive, got ", x);
  return x;
}

Status twice(int x, int* out) {
  ZL_ASSIGN_OR_RETURN(int v, parse_positive(x));
  *out = 2 * v;
  return ok_status();
}

TEST(StatusTest, CarriesCodeAndMessage) {
  Status s = data_loss("file.gguf: tensor ", "a", " truncated");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "file.gguf: tensor a truncated");
  EXPECT_EQ(s.with_prefix("load").message(), "load: file.gguf: tensor a truncated");
  EXPECT_TRUE(ok_status().with_prefix("x").ok());
}

TEST(StatusTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(twice(4, &out).ok());
  EXPECT_EQ(out, 8);
  Status s = twice(-1, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "x must be positive, got -1");
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = parse_positive(0);
  EXPECT_DEATH((void)bad.value(), "value\\(\\) on an error");
}

}  // namespace
}  // namespace zl
