// The producer's side of a wake-up (shm_ring.h): one syscall per sleep,
// none while the consumer is awake, and a sleeping consumer really wakes.
#include "transport/shm_ring.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace zl::shm {
namespace {

TEST(ShmRingTest, NoWakeWhileTheConsumerIsAwake) {
  uint32_t sleeping = 0, futex_word = 7;
  EXPECT_FALSE(wake_if_sleeping(sleeping, futex_word));
  EXPECT_EQ(futex_word, 7u);
}

TEST(ShmRingTest, OneWakePerSleep) {
  uint32_t sleeping = 1, futex_word = 7;
  EXPECT_TRUE(wake_if_sleeping(sleeping, futex_word));
  EXPECT_EQ(sleeping, 0u);
  EXPECT_EQ(futex_word, 8u);
  // More records before the consumer runs: no more syscalls.
  EXPECT_FALSE(wake_if_sleeping(sleeping, futex_word));
  EXPECT_EQ(futex_word, 8u);
}

TEST(ShmRingTest, WakesASleepingConsumer) {
  alignas(64) uint32_t sleeping = 0, futex_word = 0;
  auto t0 = std::chrono::steady_clock::now();
  std::thread consumer([&] {
    uint32_t seen = atomic(futex_word).load();
    atomic(sleeping).store(1, std::memory_order_seq_cst);
    futex_wait(&futex_word, seen, 5'000'000'000ull);  // 5 s: far beyond a wake-up
  });
  while (atomic(sleeping).load() == 0) std::this_thread::yield();
  // The consumer may not be in FUTEX_WAIT yet; then the bumped word makes it return at once.
  EXPECT_TRUE(wake_if_sleeping(sleeping, futex_word));
  consumer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace zl::shm
