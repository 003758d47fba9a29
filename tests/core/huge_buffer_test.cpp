#include "core/huge_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace zl {
namespace {

TEST(HugeBufferTest, IsAlignedZeroFilledAndWritable) {
  for (size_t bytes : {size_t{1}, size_t{4096} + 3, (size_t{2} << 20) + 1, size_t{9} << 20}) {
    HugeBuffer buffer = allocate_huge_buffer(bytes);
    ASSERT_NE(buffer.get(), nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.get()) % (size_t{2} << 20), 0u) << bytes;
    auto* p = static_cast<unsigned char*>(buffer.get());
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[bytes - 1], 0);
    std::memset(p, 0xAB, bytes);
    EXPECT_EQ(p[bytes / 2], 0xAB);
  }
}

}  // namespace
}  // namespace zl
