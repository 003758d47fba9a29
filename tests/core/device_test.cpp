#include "zerolayer/device.h"

#include <gtest/gtest.h>

namespace zl {
namespace {

TEST(ParseDevice, AcceptsCpuCudaAndOrdinals) {
  EXPECT_EQ(*parse_device("cpu"), Device{});
  EXPECT_EQ(*parse_device("cuda"), (Device{Device::Kind::kCuda, 0}));
  EXPECT_EQ(*parse_device("cuda:0"), (Device{Device::Kind::kCuda, 0}));
  EXPECT_EQ(*parse_device("cuda:7"), (Device{Device::Kind::kCuda, 7}));
  EXPECT_EQ(*parse_device("cuda:1023"), (Device{Device::Kind::kCuda, 1023}));
  EXPECT_EQ(device_name(*parse_device("cuda:3")), "cuda:3");
  EXPECT_EQ(device_name(*parse_device("cpu")), "cpu");
}

TEST(ParseDevice, RejectsMalformedText) {
  for (const char* text : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:1x", "cuda:1024", "cuda:99999", "cuda 0",
                           " cpu", "cuda:+1"}) {
    StatusOr<Device> device = parse_device(text);
    ASSERT_FALSE(device.ok()) << text;
    EXPECT_NE(device.status().message().find("--device"), std::string::npos) << device.status().message();
  }
}

}  // namespace
}  // namespace zl
