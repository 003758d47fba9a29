// The NVML reader against the fake libnvidia-ml of tests/core/fake_nvml.c
// (device 0: 37% / 21% utilisation, 12 GiB of 141 GiB; device 1: utilisation
// not supported, 1 GiB), and without any library at all.
#include "core/gpu_counters.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "test_util.h"

namespace zl {
namespace {

// Sets (or unsets, with nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class GpuCountersTest : public ::testing::Test {
 protected:
  ScopedEnv no_visible_{"CUDA_VISIBLE_DEVICES", std::nullopt};
  ScopedEnv no_library_{"ZEROLAYER_NVML_LIBRARY", std::nullopt};
  const std::string fake_ = test::fake_nvml_path();
};

TEST_F(GpuCountersTest, ReadsTheDevicesCounters) {
  auto counters = GpuCounters::open(0, fake_);
  ASSERT_TRUE(counters.ok()) << counters.status().message();
  auto sample = (*counters)->read();
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_EQ(sample->cuda_ordinal, 0);
  EXPECT_EQ(sample->name, "Fake H200");
  ASSERT_TRUE(sample->sm_utilization && sample->memory_utilization);
  EXPECT_DOUBLE_EQ(*sample->sm_utilization, 0.37);
  EXPECT_DOUBLE_EQ(*sample->memory_utilization, 0.21);
  EXPECT_EQ(sample->memory_used_bytes, 12ull << 30);
  EXPECT_EQ(sample->memory_total_bytes, 141ull << 30);
}

TEST_F(GpuCountersTest, UnsupportedUtilisationIsAbsentNotAnError) {
  auto counters = GpuCounters::open(1, fake_);
  ASSERT_TRUE(counters.ok()) << counters.status().message();
  auto sample = (*counters)->read();
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_FALSE(sample->sm_utilization);
  EXPECT_FALSE(sample->memory_utilization);
  EXPECT_EQ(sample->memory_used_bytes, 1ull << 30);
}

TEST_F(GpuCountersTest, TheEnvironmentNamesTheLibrary) {
  ScopedEnv library("ZEROLAYER_NVML_LIBRARY", fake_);
  auto counters = GpuCounters::open(0);
  ASSERT_TRUE(counters.ok()) << counters.status().message();
  EXPECT_EQ((*counters)->read()->name, "Fake H200");
}

TEST_F(GpuCountersTest, CudaVisibleDevicesMapsOrdinalsAsCudaDoes) {
  {
    ScopedEnv visible("CUDA_VISIBLE_DEVICES", "1,0");
    auto counters = GpuCounters::open(0, fake_);
    ASSERT_TRUE(counters.ok()) << counters.status().message();
    EXPECT_EQ((*counters)->read()->name, "Fake H200 MIG");
    auto beyond = GpuCounters::open(2, fake_);
    ASSERT_FALSE(beyond.ok());
    EXPECT_NE(beyond.status().message().find("CUDA_VISIBLE_DEVICES=1,0"), std::string::npos);
  }
  {
    ScopedEnv visible("CUDA_VISIBLE_DEVICES", "GPU-fake-1");
    auto counters = GpuCounters::open(0, fake_);
    ASSERT_TRUE(counters.ok()) << counters.status().message();
    EXPECT_EQ((*counters)->read()->memory_used_bytes, 1ull << 30);
  }
  ScopedEnv visible("CUDA_VISIBLE_DEVICES", "MIG-abc");
  auto counters = GpuCounters::open(0, fake_);
  ASSERT_FALSE(counters.ok());
  EXPECT_NE(counters.status().message().find("MIG-abc"), std::string::npos);
}

TEST_F(GpuCountersTest, NoSuchDeviceNamesTheOrdinal) {
  auto counters = GpuCounters::open(5, fake_);
  ASSERT_FALSE(counters.ok());
  EXPECT_NE(counters.status().message().find("cuda:5"), std::string::npos) << counters.status().message();
  EXPECT_NE(counters.status().message().find("Invalid Argument"), std::string::npos) << counters.status().message();
}

TEST_F(GpuCountersTest, AMissingLibraryIsNotFound) {
  auto counters = GpuCounters::open(0, test::temp_dir() + "/no-such-libnvidia-ml.so.1");
  ASSERT_FALSE(counters.ok());
  EXPECT_EQ(counters.status().code(), StatusCode::kNotFound);
  EXPECT_NE(counters.status().message().find("no-such-libnvidia-ml"), std::string::npos);
}

TEST_F(GpuCountersTest, ALibraryWithoutNvmlIsNotFound) {
  // The C library is loadable but exports no NVML function.
  auto counters = GpuCounters::open(0, "libc.so.6");
  ASSERT_FALSE(counters.ok());
  EXPECT_EQ(counters.status().code(), StatusCode::kNotFound);
  EXPECT_NE(counters.status().message().find("nvmlInit_v2"), std::string::npos) << counters.status().message();
}

TEST_F(GpuCountersTest, InitAndShutdownPair) {
  // dlopen of the same file shares the loaded library, so its count is visible here.
  void* fake = dlopen(fake_.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(fake, nullptr) << dlerror();
  auto num_initialised = reinterpret_cast<int (*)()>(dlsym(fake, "fake_nvml_num_initialised"));
  ASSERT_NE(num_initialised, nullptr);
  {
    auto counters = GpuCounters::open(0, fake_);
    ASSERT_TRUE(counters.ok());
    EXPECT_EQ(num_initialised(), 1);
    EXPECT_FALSE(GpuCounters::open(7, fake_).ok());  // a failed open shuts down too
    EXPECT_EQ(num_initialised(), 1);
  }
  EXPECT_EQ(num_initialised(), 0);
  dlclose(fake);
}

}  // namespace
}  // namespace zl
