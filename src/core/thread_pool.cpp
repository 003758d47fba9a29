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
  shares_ = std::make_unique<Share[]>(static_cast<size_t>(workers) + 1);
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
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
// A share's fields (ThreadPool::Share).
uint64_t share_next(uint64_t word) { return word & kPartMask; }
uint64_t share_end(uint64_t word) { return (word >> kPartBits) & kPartMask; }
}  // namespace

int64_t ThreadPool::claim(int self) {
  std::atomic<uint64_t>& own = shares_[self].word;
  for (uint64_t w = own.load(std::memory_order_acquire); share_next(w) < share_end(w);)
    if (own.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      return static_cast<int64_t>(share_next(w));
  for (;;) {
    int victim = -1;
    uint64_t victim_word = 0, most = 0;
    for (int t = 0; t < num_threads(); ++t) {
      const uint64_t w = shares_[t].word.load(std::memory_order_acquire);
      if (share_end(w) > share_next(w) && share_end(w) - share_next(w) > most)
        victim = t, victim_word = w, most = share_end(w) - share_next(w);
    }
    if (victim < 0) return -1;
    if (shares_[victim].word.compare_exchange_strong(victim_word, victim_word - (uint64_t{1} << kPartBits),
                                                     std::memory_order_acq_rel, std::memory_order_acquire))
      return static_cast<int64_t>(share_end(victim_word)) - 1;
  }
}

void ThreadPool::run_parts(int self) {
  for (int64_t part = claim(self); part >= 0; part = claim(self)) {
    // The claim belongs to the current call, whose fields the caller wrote
    // before publishing the shares and keeps until this part is done.
    const int64_t grains = (task_n_ + task_grain_ - 1) / task_grain_;
    const int64_t begin = std::min(task_n_, grains * part / task_parts_ * task_grain_);
    const int64_t end = std::min(task_n_, grains * (part + 1) / task_parts_ * task_grain_);
    if (begin < end) (*task_)(begin, end);
    parts_done_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::worker_loop(int self) {
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
    run_parts(self);
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
  task_parts_ = parts;
  parts_done_.store(0, std::memory_order_relaxed);
  const uint64_t call = ++calls_ << 32;
  for (int t = 0; t < num_threads(); ++t) {
    const auto first = static_cast<uint64_t>(parts * t / num_threads());
    const auto end = static_cast<uint64_t>(parts * (t + 1) / num_threads());
    shares_[t].word.store(call | (end << kPartBits) | first, std::memory_order_release);
  }
  resting_.store(false, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  // Spinning workers see the new generation; only sleeping ones need the
  // condition variable (and its mutex, so that none is between checking
  // the generation and blocking): within a forward pass, none usually.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_parts(0);
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
