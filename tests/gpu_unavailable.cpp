// Stands in for every *_gpu_test.cpp when zerolayer is built without CUDA:
// one test that reports skipped, so ctest -L gpu says why nothing ran.
#include <gtest/gtest.h>

TEST(Gpu, Unavailable) { GTEST_SKIP() << "built without CUDA (nvcc was not found, or ZL_ENABLE_CUDA=OFF, when zerolayer was configured)"; }
