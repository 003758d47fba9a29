#include "server/cpu_workers.h"

#include <algorithm>

namespace zl::server {

CpuWorkers::CpuWorkers(int num_threads, size_t max_queued, uint64_t max_queued_bytes)
    : max_queued_(max_queued), max_queued_bytes_(max_queued_bytes) {
  for (int i = 0; i < std::max(num_threads, 1); ++i) threads_.emplace_back([this] { run(); });
}

CpuWorkers::~CpuWorkers() { stop(); }

bool CpuWorkers::try_post(std::function<void()> job, uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || queue_.size() >= max_queued_ || queued_bytes_ + bytes > max_queued_bytes_) return false;
    queue_.push_back({std::move(job), bytes});
    queued_bytes_ += bytes;
  }
  wake_.notify_one();
  return true;
}

void CpuWorkers::stop() {
  std::deque<Queued> dropped;
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
      job = std::move(queue_.front().job);
      queued_bytes_ -= queue_.front().bytes;
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace zl::server
