#include "core/thread_pool.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace zl {

int default_num_threads() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

ThreadPool::ThreadPool(int num_threads) {
  int workers = std::max(0, num_threads - 1);
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {
constexpr uint64_t kPartBits = 16, kPartMask = (uint64_t{1} << kPartBits) - 1;
}  // namespace

void ThreadPool::run_parts() {
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t next = c & kPartMask, parts = (c >> kPartBits) & kPartMask;
    if (next >= parts) return;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // The claim belongs to the current call, whose fields the caller wrote
    // before publishing claim_ and keeps until this part is done.
    const int64_t grains = (task_n_ + task_grain_ - 1) / task_grain_;
    const auto part = static_cast<int64_t>(next), num_parts = static_cast<int64_t>(parts);
    const int64_t begin = std::min(task_n_, grains * part / num_parts * task_grain_);
    const int64_t end = std::min(task_n_, grains * (part + 1) / num_parts * task_grain_);
    if (begin < end) (*task_)(begin, end);
    parts_done_.fetch_add(1, std::memory_order_release);
    c = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    // Spin briefly: in a forward pass the next op follows within microseconds.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < 20000 && !resting_.load(std::memory_order_relaxed); ++spin) {
      __builtin_ia32_pause();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      // seq_cst pairs with parallel_for(): it either sees this sleeper, or
      // its generation bump comes first and the wait below returns at once.
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_relaxed)) return;
    run_parts();
  }
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, int64_t grain, int parts_per_thread) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t grains = (n + grain - 1) / grain;
  const int64_t parts = std::min<int64_t>({grains, int64_t{num_threads()} * std::max(1, parts_per_thread),
                                           static_cast<int64_t>(kPartMask)});
  if (workers_.empty() || parts <= 1) {
    fn(0, n);
    return;
  }
  // Every part of the previous call is done, so no thread reads these now.
  task_ = &fn;
  task_n_ = n;
  task_grain_ = grain;
  parts_done_.store(0, std::memory_order_relaxed);
  const uint64_t call = (claim_.load(std::memory_order_relaxed) >> 32) + 1;
  claim_.store((call << 32) | (static_cast<uint64_t>(parts) << kPartBits), std::memory_order_release);
  resting_.store(false, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  // Spinning workers see the new generation; only sleeping ones need the
  // condition variable (and its mutex, so that none is between checking
  // the generation and blocking): within a forward pass, none usually.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_parts();
  // Spin for parts still running elsewhere; yield once it takes long (cores
  // shared with other work).
  for (int spin = 0; parts_done_.load(std::memory_order_acquire) != parts; ++spin) {
    if (spin < 4096) {
      __builtin_ia32_pause();
    } else {
      sched_yield();
    }
  }
}

}  // namespace zl
