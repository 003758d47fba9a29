// ThreadPool::parallel_for: the parts cover the range once, depend only on
// the arguments, and go to whichever thread is free (a slow part does not
// hold the parts behind it); each thread runs its own share front to back.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace zl {
namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;

Ranges ranges_of(ThreadPool& pool, int64_t n, int64_t grain, int parts_per_thread) {
  std::mutex mutex;
  Ranges seen;
  pool.parallel_for(
      n,
      [&](int64_t begin, int64_t end) {
        std::lock_guard<std::mutex> lock(mutex);
        seen.emplace_back(begin, end);
      },
      grain, parts_per_thread);
  std::sort(seen.begin(), seen.end());
  return seen;
}

TEST(ThreadPool, PartsCoverTheRangeOnceOnGrainBoundaries) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 15, 16, 17, 100, 1000, 4096}) {
      for (int64_t grain : {1, 16}) {
        for (int parts_per_thread : {1, 4}) {
          SCOPED_TRACE(testing::Message() << threads << " threads, n " << n << ", grain " << grain << ", "
                                          << parts_per_thread << " parts per thread");
          const Ranges r = ranges_of(pool, n, grain, parts_per_thread);
          ASSERT_FALSE(r.empty());
          const int64_t grains = (n + grain - 1) / grain;
          const int64_t parts = threads == 1 ? 1 : std::min<int64_t>(grains, int64_t{threads} * parts_per_thread);
          EXPECT_EQ(static_cast<int64_t>(r.size()), parts);
          EXPECT_EQ(r.front().first, 0);
          EXPECT_EQ(r.back().second, n);
          for (size_t i = 0; i < r.size(); ++i) {
            EXPECT_LT(r[i].first, r[i].second);
            EXPECT_EQ(r[i].first % grain, 0);
            if (i > 0) {
              EXPECT_EQ(r[i].first, r[i - 1].second);
            }
          }
          // The same arguments give the same parts, whatever the timing.
          EXPECT_EQ(ranges_of(pool, n, grain, parts_per_thread), r);
        }
      }
    }
  }
}

TEST(ThreadPool, ManyCallsTouchEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(257);
  for (int call = 0; call < 20000; ++call) {
    const auto n = static_cast<int64_t>(1 + call % 257);
    pool.parallel_for(
        n,
        [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
        },
        1, 1 + call % 5);
    if (call % 1000 == 999) pool.rest();  // workers go to sleep and are woken again
  }
  // Index i is below n in every call where n = 1 + call % 257 > i.
  for (size_t i = 0; i < hits.size(); ++i) {
    int expected = 0;
    for (int call = 0; call < 20000; ++call) expected += 1 + call % 257 > static_cast<int>(i) ? 1 : 0;
    EXPECT_EQ(hits[i].load(), expected) << "index " << i;
  }
}

TEST(ThreadPool, FreeThreadTakesThePartsBehindASlowOne) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::map<std::thread::id, std::vector<int64_t>> parts_by_thread;
  std::atomic<bool> stalled{false};
  int64_t slow_part = -1;
  // 8 parts of one index each; the first part to start stalls its thread
  // (as a descheduled core would), so the other thread should run all the
  // other 7, its own share's and the slow thread's.
  pool.parallel_for(
      8,
      [&](int64_t begin, int64_t) {
        if (!stalled.exchange(true)) {
          slow_part = begin;
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        std::lock_guard<std::mutex> lock(mutex);
        parts_by_thread[std::this_thread::get_id()].push_back(begin);
      },
      1, 4);
  ASSERT_EQ(parts_by_thread.size(), 2u) << "both threads should have run parts";
  for (const auto& [id, parts] : parts_by_thread) {
    const bool ran_slow_part = std::find(parts.begin(), parts.end(), slow_part) != parts.end();
    EXPECT_EQ(parts.size(), ran_slow_part ? 1u : 7u);
  }
}

TEST(ThreadPool, EachThreadRunsItsShareFrontToBackThenTakesFromTheBack) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::map<std::thread::id, std::vector<int64_t>> parts_by_thread;
  std::atomic<bool> worker_started{false};
  const std::thread::id caller = std::this_thread::get_id();
  // 8 parts of one index each: the caller's share is 0..3, the worker's
  // 4..7. The caller's first part waits for the worker to run one, so the
  // worker starts on its own share rather than finding it taken.
  pool.parallel_for(
      8,
      [&](int64_t begin, int64_t) {
        if (begin == 0) {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          while (!worker_started.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
        }
        std::lock_guard<std::mutex> lock(mutex);
        parts_by_thread[std::this_thread::get_id()].push_back(begin);
        if (std::this_thread::get_id() != caller) worker_started.store(true);
      },
      1, 4);
  // (The caller may run none: descheduled before its first claim, it finds
  // every part taken.)
  ASSERT_TRUE(worker_started.load()) << "the worker should have run parts";
  for (const auto& [id, parts] : parts_by_thread) {
    const int64_t first = id == caller ? 0 : 4;
    SCOPED_TRACE(testing::Message() << (id == caller ? "caller" : "worker"));
    ASSERT_FALSE(parts.empty());
    EXPECT_EQ(parts[0], first);
    // Its own share ascending from its front, then the other's descending
    // from its back.
    auto own = [&](int64_t part) { return part >= first && part < first + 4; };
    size_t i = 1;
    while (i < parts.size() && parts[i] == parts[i - 1] + 1 && own(parts[i])) ++i;
    for (; i < parts.size(); ++i) {
      EXPECT_FALSE(own(parts[i])) << "part " << parts[i] << " of its own share, out of order";
      if (!own(parts[i - 1])) {
        EXPECT_LT(parts[i], parts[i - 1]);
      }
    }
  }
}

}  // namespace
}  // namespace zl
