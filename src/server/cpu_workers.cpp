#include "server/cpu_workers.h"

#include <algorithm>

namespace zl::server {

CpuWorkers::CpuWorkers(int num_threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < std::max(num_threads, 1); ++i) threads_.emplace_back([this] { run(); });
}

CpuWorkers::~CpuWorkers() { stop(); }

bool CpuWorkers::try_post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void CpuWorkers::stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}  // `dropped` (and what its jobs hold) is released here, off the lock

void CpuWorkers::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace zl::server
