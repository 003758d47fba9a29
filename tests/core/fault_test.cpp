// Fault injection's plans (core/fault.h): which hits fail, and how
// ZEROLAYER_FAULTS specs parse or are refused naming what is wrong.
#include "core/fault.h"

#include <gtest/gtest.h>

#include <vector>

namespace zl::fault {
namespace {

class FaultTest : public ::testing::Test {
 protected:
  void TearDown() override { disarm_all(); }
};

std::vector<int> failing_hits(Point point, int num_hits) {
  std::vector<int> failed;
  for (int h = 0; h < num_hits; ++h)
    if (should_fail(point)) failed.push_back(h);
  return failed;
}

TEST_F(FaultTest, DisarmedNeverFails) {
  EXPECT_TRUE(failing_hits(Point::kForward, 100).empty());
}

TEST_F(FaultTest, AfterEveryAndCountPickTheFailingHits) {
  arm(Point::kForward, {.after = 3, .every = 4, .count = 3});
  EXPECT_EQ(failing_hits(Point::kForward, 30), (std::vector<int>{3, 7, 11}));
  EXPECT_EQ(num_failed(Point::kForward), 3);
  EXPECT_TRUE(failing_hits(Point::kKvAdmit, 10).empty());  // other points stay disarmed
}

TEST_F(FaultTest, ArmingAgainStartsCountingAfresh) {
  arm(Point::kKvGrow, {.after = 0, .count = 1});
  EXPECT_EQ(failing_hits(Point::kKvGrow, 5), (std::vector<int>{0}));
  arm(Point::kKvGrow, {.after = 1, .count = 1});
  EXPECT_EQ(failing_hits(Point::kKvGrow, 5), (std::vector<int>{1}));
  EXPECT_EQ(num_failed(Point::kKvGrow), 1);
}

TEST_F(FaultTest, SpecArmsSeveralPoints) {
  ASSERT_TRUE(arm_from_spec("forward:every=2,kv_admit:after=1:count=2").ok());
  EXPECT_EQ(failing_hits(Point::kForward, 6), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(failing_hits(Point::kKvAdmit, 6), (std::vector<int>{1, 2}));
  EXPECT_TRUE(failing_hits(Point::kKvGrow, 6).empty());
}

TEST_F(FaultTest, BadSpecsAreRefusedNamingThePartAndArmNothing) {
  auto expect_refused = [](const char* spec, const char* needle) {
    Status s = arm_from_spec(spec);
    ASSERT_FALSE(s.ok()) << spec;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_refused("forward:every=2,disk", "unknown point \"disk\"");
  expect_refused("forward:often=2", "unknown key \"often\"");
  expect_refused("kv_grow:every=0", "every must be an integer >= 1");
  expect_refused("kv_grow:count=-1", "count must be an integer >= 0");
  expect_refused("kv_grow:after=1x", "after must be an integer");
  expect_refused("forward:after", "after must be an integer");
  // The good part before the bad one was not armed.
  EXPECT_TRUE(failing_hits(Point::kForward, 4).empty());
}

}  // namespace
}  // namespace zl::fault
