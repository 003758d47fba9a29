#include "engine/inbox.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace zl {

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wait_for(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout) {
  const timespec relative{static_cast<time_t>(timeout.count() / 1000000000),
                          static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &relative, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

Inbox::Inbox() : head_(&stub_), tail_(&stub_) {}

Inbox::~Inbox() {
  while (InboxMessage* m = pop()) delete m;
}

void Inbox::push(InboxMessage* message) {
  message->next.store(nullptr, std::memory_order_relaxed);
  InboxMessage* prev = head_.exchange(message, std::memory_order_acq_rel);
  prev->next.store(message, std::memory_order_release);
  // seq_cst pairs with wait(): either the engine sees the message before it
  // sleeps, or we see it sleeping and wake it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed) != 0) wake_all();
}

InboxMessage* Inbox::pop() {
  InboxMessage* tail = tail_;
  InboxMessage* next = tail->next.load(std::memory_order_acquire);
  if (tail == &stub_) {
    if (next == nullptr) return nullptr;
    tail_ = next;
    tail = next;
    next = next->next.load(std::memory_order_acquire);
  }
  if (next != nullptr) {
    tail_ = next;
    return tail;
  }
  if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // a push is mid-way
  // tail is the only message: queue the stub behind it so tail can be taken.
  stub_.next.store(nullptr, std::memory_order_relaxed);
  InboxMessage* prev = head_.exchange(&stub_, std::memory_order_acq_rel);
  prev->next.store(&stub_, std::memory_order_release);
  next = tail->next.load(std::memory_order_acquire);
  if (next != nullptr) {
    tail_ = next;
    return tail;
  }
  return nullptr;
}

bool Inbox::maybe_nonempty() const {
  return tail_->next.load(std::memory_order_acquire) != nullptr || head_.load(std::memory_order_acquire) != tail_;
}

void Inbox::wait(int spin_iterations) {
  for (int i = 0; i < spin_iterations; ++i) {
    if (maybe_nonempty()) return;
    __builtin_ia32_pause();
  }
  uint32_t seen = wakeups_.load(std::memory_order_acquire);
  sleeping_.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!maybe_nonempty()) futex_wait(&wakeups_, seen);
  sleeping_.store(0, std::memory_order_relaxed);
}

void Inbox::wake_all() {
  wakeups_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(&wakeups_);
}

}  // namespace zl
