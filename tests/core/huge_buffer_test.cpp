#include "core/huge_buffer.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

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

// The 4 KiB pages of [p, p + bytes) that are in memory (mincore).
size_t resident_pages(void* p, size_t bytes) {
  std::vector<unsigned char> in_core((bytes + 4095) / 4096);
  if (mincore(p, bytes, in_core.data()) != 0) return 0;
  return static_cast<size_t>(std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return c & 1; }));
}

// A fresh buffer has no page in memory; populated, it has every one, and it
// still reads as zeros.
TEST(HugeBufferTest, PopulateBacksEveryPage) {
  const size_t bytes = (size_t{16} << 20) + 4096 * 3;
  HugeBuffer buffer = allocate_huge_buffer(bytes);
  ASSERT_NE(buffer.get(), nullptr);
  const size_t pages = (bytes + 4095) / 4096;
  EXPECT_EQ(resident_pages(buffer.get(), bytes), 0u);
  ASSERT_EQ(populate_huge_buffer(buffer.get(), bytes), 0);
  EXPECT_EQ(resident_pages(buffer.get(), bytes), pages);
  const auto* p = static_cast<const unsigned char*>(buffer.get());
  EXPECT_TRUE(std::all_of(p, p + bytes, [](unsigned char c) { return c == 0; }));
}

}  // namespace
}  // namespace zl
