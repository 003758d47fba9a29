// The seqlock of core/seqlock.h: a reader racing a writer either gets a copy
// that one write produced in full, or reports failure; never a mix.
#include "core/seqlock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace zl {
namespace {

// A section as in a stats region: the sequence word, then data.
struct Section {
  uint64_t sequence = 0;
  uint64_t words[1023] = {};  // 8 KiB, as a histogram section
};

TEST(Seqlock, ReaderNeverSeesATornCopy) {
  auto shared = std::make_unique<Section>();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> num_writes{0};
  std::thread writer([&] {
    for (uint64_t value = 1; !stop.load(std::memory_order_relaxed); ++value) {
      seqlock_write_begin(shared->sequence);
      for (uint64_t& w : shared->words) seqlock_store(&w, &value, sizeof(value));  // every word the same
      seqlock_write_end(shared->sequence);
      num_writes.store(value, std::memory_order_relaxed);
      // Stable for a moment, as the engine's sections mostly are, so some reads succeed.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(1);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  });
  auto copy_storage = std::make_unique<Section>();
  Section& copy = *copy_storage;
  int num_good = 0, num_torn = 0;
  uint64_t last_value = 0;
  // From the first write, until reads and writes have had many chances to
  // overlap, even on a busy machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (num_writes.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  while ((num_good < 1000 || num_writes.load() < 20000) && std::chrono::steady_clock::now() < deadline) {
    if (!seqlock_read(shared.get(), &copy, sizeof(copy), 100)) continue;
    ++num_good;
    EXPECT_EQ(copy.sequence % 2, 0u);
    for (uint64_t w : copy.words) num_torn += w != copy.words[0];
    EXPECT_GE(copy.words[0], last_value) << "a later read returned an older write";
    last_value = copy.words[0];
  }
  stop.store(true);
  writer.join();
  EXPECT_EQ(num_torn, 0);
  EXPECT_GT(num_good, 0);
  EXPECT_GT(last_value, 0u) << "the reader never saw the writer's data";
}

TEST(Seqlock, WriterStuckInsideFailsTheRead) {
  Section section;
  section.words[0] = 7;
  seqlock_write_begin(section.sequence);  // a writer that died mid-write
  Section copy;
  EXPECT_FALSE(seqlock_read(&section, &copy, sizeof(copy), 5));
  seqlock_write_end(section.sequence);
  ASSERT_TRUE(seqlock_read(&section, &copy, sizeof(copy), 5));
  EXPECT_EQ(copy.words[0], 7u);
  EXPECT_EQ(copy.sequence, 2u);
}

}  // namespace
}  // namespace zl
