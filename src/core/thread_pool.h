// A persistent pool of worker threads for data-parallel kernels. Threads are
// created once; each parallel_for wakes them (spin, then sleep on a condition
// variable when idle; the caller takes its mutex only when one sleeps), and
// the calling thread takes part. The range is cut into fixed parts, dealt
// out as one contiguous share a thread; each thread runs its share front to
// back, then takes parts from the back of the share with the most left, and
// the call returns when every part is done: a worker the OS has descheduled
// (cores shared with other work) delays the call by at most the part it
// holds, and one that wakes after the last part was claimed does not delay
// it at all. Contiguous shares keep each thread on one stream of memory, so
// a kernel that reads the rows past its part ahead reads what the same
// thread runs next (interleaved claims left each part's first rows cold: a
// 2048 x 2048 Q4_0 matmul of 32 tokens on two threads, 32 parts, took 0.423
// ms against 0.395 in two parts).
// The parts, and so each fn(begin, end) call, depend only on n, grain and the
// part count, never on timing. Only one thread may call parallel_for at a
// time (the thread that runs the model's forward pass: the engine thread,
// or under overlap scheduling the forward runner, the two taking turns).
#pragma once

#include <atomic>
#include <condition_variable>
#include <concepts>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace zl {

// A non-owning reference to a callable fn(begin, end), valid while the
// callable lives. Unlike std::function, binding a lambda never allocates,
// whatever it captures, so a forward pass's many parallel_for calls stay off
// the allocator (issue 3: after warm-up a step allocates nothing).
class RangeFn {
 public:
  template <typename F>
    requires(std::invocable<F&, int64_t, int64_t> && !std::same_as<std::remove_cvref_t<F>, RangeFn>)
  RangeFn(F&& fn)  // NOLINT: implicit by design, lambdas convert at the call
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(fn)))),
        call_([](void* object, int64_t begin, int64_t end) {
          (*static_cast<std::remove_reference_t<F>*>(object))(begin, end);
        }) {}

  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void* object, int64_t begin, int64_t end);
};

class ThreadPool {
 public:
  // num_threads counts the caller: 1 means no workers, everything inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n): num_threads() x
  // parts_per_thread contiguous parts (each a multiple of `grain` but the
  // last; fewer when n has fewer grains), in any order, on any thread. A
  // pool of one thread makes one call, fn(0, n).
  void parallel_for(int64_t n, RangeFn fn, int64_t grain = 1, int parts_per_thread = 1);

  // No parallel work for a while (the end of a forward pass): workers sleep
  // now instead of spinning, so the cores are free for other threads; the
  // next parallel_for wakes them.
  void rest() { resting_.store(true, std::memory_order_relaxed); }

 private:
  void worker_loop(int self);
  // Claims and runs parts of the current call until none is left, thread
  // `self` (the caller: 0) first from its own share.
  void run_parts(int self);
  // The next part for thread `self`, or -1 when every part is claimed.
  int64_t claim(int self);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // The current call; written only while no part of the previous one is
  // unfinished, published by the release stores of the shares.
  const RangeFn* task_ = nullptr;
  int64_t task_n_ = 0;
  int64_t task_grain_ = 1;
  int64_t task_parts_ = 0;
  uint64_t calls_ = 0;  // parallel_for calls that used the workers
  // Thread t's share of the current call: (call number << 32) | (end << 16)
  // | next unclaimed part, claimed from the front by t and from the back by
  // the others. Every share of a finished call is empty, so a thread late
  // from it claims nothing there, and its compare-exchange fails on a share
  // rewritten since it looked.
  struct alignas(64) Share {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Share[]> shares_;
  std::atomic<int> parts_done_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};  // workers waiting on wake_
  std::atomic<bool> resting_{false};
  // Atomic: a worker that woke for the last parallel_for() may read it while
  // the destructor writes it (found by ThreadSanitizer). The generation bump
  // after the store publishes it to workers that wake for the stop.
  std::atomic<bool> stop_{false};
};

// Default thread count: the number of online cores.
int default_num_threads();

}  // namespace zl
