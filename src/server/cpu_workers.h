// Threads for a request's CPU work of unbounded size: JSON parsing, chat
// template rendering, tokenizing and detokenizing. It runs here, not on the
// HTTP I/O threads, so that a 16 MB prompt delays only its own response and
// /health on any connection still answers at once. The queue is bounded in
// jobs and in the bytes they hold (request bodies): a job that does not fit
// is refused (the caller answers 503), never buffered without limit.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zl::server {

class CpuWorkers {
 public:
  CpuWorkers(int num_threads, size_t max_queued, uint64_t max_queued_bytes);
  ~CpuWorkers();  // stop()
  CpuWorkers(const CpuWorkers&) = delete;
  CpuWorkers& operator=(const CpuWorkers&) = delete;

  // Queues `job`, which holds `bytes` of input, for a worker; false if the
  // queue is full (in jobs or bytes) or stopped. Any thread.
  bool try_post(std::function<void()> job, uint64_t bytes);
  // Lets running jobs finish, drops queued ones, joins the threads.
  void stop();

 private:
  void run();

  struct Queued {
    std::function<void()> job;
    uint64_t bytes;
  };

  const size_t max_queued_;
  const uint64_t max_queued_bytes_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Queued> queue_;
  uint64_t queued_bytes_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace zl::server
