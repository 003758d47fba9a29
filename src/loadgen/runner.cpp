#include "loadgen/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace zl::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

// Indices of due requests, handed from the dispatcher to the workers.
class DueQueue {
 public:
  void push(int index) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      due_.push_back(index);
    }
    cv_.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  // The next index, or -1 once closed and empty.
  int pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return closed_ || !due_.empty(); });
    if (due_.empty()) return -1;
    int index = due_.front();
    due_.pop_front();
    return index;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<int> due_;
  bool closed_ = false;
};

}  // namespace

StatusOr<RunOutcome> run_pass(Target& target, const std::vector<BenchRequest>& requests,
                              const std::vector<double>& arrivals_s, int max_concurrency,
                              const std::function<void(int, int)>& progress) {
  const int total = static_cast<int>(requests.size());
  int num_workers = std::min(total, target.max_sessions());
  if (max_concurrency > 0) num_workers = std::min(num_workers, max_concurrency);
  // Sessions open before the clock starts, so that claiming shm slots is not timed.
  std::vector<std::unique_ptr<Session>> sessions;
  for (int w = 0; w < num_workers; ++w) {
    auto session = target.open_session();
    if (!session.ok()) return session.status();
    sessions.push_back(std::move(*session));
  }
  RunOutcome out;
  out.num_workers = num_workers;
  out.results.resize(total);
  std::atomic<int> done{0};
  std::atomic<int64_t> last_end_ns{0};
  DueQueue queue;
  const Clock::time_point start = Clock::now();
  out.start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<std::thread> workers;
  for (int w = 0; w < num_workers; ++w) {
    workers.emplace_back([&, w] {
      for (int i; (i = queue.pop()) >= 0;) {
        const double start_s = std::chrono::duration<double>(Clock::now() - start).count();
        sessions[w]->run(requests[i], &out.results[i]);
        out.results[i].start_s = start_s;  // after run(), which may start the result afresh
        int64_t end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
        int64_t prev = last_end_ns.load();
        while (prev < end_ns && !last_end_ns.compare_exchange_weak(prev, end_ns)) {
        }
        done.fetch_add(1);
      }
    });
  }
  std::thread dispatcher([&] {
    for (int i = 0; i < total; ++i) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(arrivals_s[i])));
      queue.push(i);
    }
    queue.close();
  });
  while (done.load() < total) {
    progress(done.load(), total);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  dispatcher.join();
  for (auto& t : workers) t.join();
  progress(total, total);
  out.duration_s = static_cast<double>(last_end_ns.load()) * 1e-9;
  return out;
}

}  // namespace zl::loadgen
