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
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunk(int index) {
  int64_t parts = num_threads();
  int64_t grains = (task_n_ + task_grain_ - 1) / task_grain_;
  int64_t begin = std::min(task_n_, grains * index / parts * task_grain_);
  int64_t end = std::min(task_n_, grains * (index + 1) / parts * task_grain_);
  if (begin < end) (*task_)(begin, end);
}

void ThreadPool::worker_loop(int index) {
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
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_) return;
    run_chunk(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, int64_t grain) {
  if (n <= 0) return;
  if (workers_.empty() || n <= grain) {
    fn(0, n);
    return;
  }
  task_ = &fn;
  task_n_ = n;
  task_grain_ = std::max<int64_t>(1, grain);
  resting_.store(false, std::memory_order_relaxed);
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_chunk(0);
  // Spin for the workers; yield once it takes long (cores shared with other work).
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < 4096) {
      __builtin_ia32_pause();
    } else {
      sched_yield();
    }
  }
  task_ = nullptr;
}

}  // namespace zl
