// The engine's inbox: a lock-free multi-producer, single-consumer queue of
// messages (D. Vyukov's intrusive MPSC queue), plus the futex the engine
// sleeps on when it has nothing to do. Producers (submit/abort on any thread)
// never block: push is one atomic exchange and, only if the engine sleeps, a
// futex wake. The engine thread alone pops.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "engine/sequence.h"

namespace zl {

struct EngineStats;

struct InboxMessage {
  enum class Kind { kSubmit, kAbort, kStopString, kStats, kCall, kReload, kStop, kStub };
  std::atomic<InboxMessage*> next{nullptr};
  Kind kind = Kind::kStub;
  std::unique_ptr<Sequence> sequence;  // kSubmit
  RequestId id = 0;                    // kAbort, kStopString
  EngineStats* stats_out = nullptr;    // kStats: filled, then stats_done set and woken
  const std::function<void()>* call = nullptr;  // kCall: run, then stats_done set and woken
  const std::string* reload_spec = nullptr;     // kReload: the model; once done, *reload_result set,
  Status* reload_result = nullptr;              // then stats_done set and woken
  std::atomic<uint32_t>* stats_done = nullptr;
};

class Inbox {
 public:
  Inbox();
  ~Inbox();
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Any thread. Takes ownership of the message; wakes the engine if it sleeps.
  void push(InboxMessage* message);
  // Engine thread. Returns the oldest message (caller owns it) or nullptr.
  InboxMessage* pop();
  // Engine thread: true if a push may be pending.
  bool maybe_nonempty() const;

  // Engine thread: spins for spin_iterations checking for messages, then
  // sleeps on the futex until a push wakes it. Returns at once if a message
  // is already there or wake_all() was called.
  void wait(int spin_iterations);

 private:
  void wake_all();

  std::atomic<InboxMessage*> head_;    // producers exchange here
  InboxMessage* tail_;                 // consumer's end
  InboxMessage stub_;
  std::atomic<uint32_t> sleeping_{0};  // futex word: 1 while the engine sleeps
  std::atomic<uint32_t> wakeups_{0};   // bumped by every wake; the futex compares it
};

// Futex helpers on a 32-bit atomic (Linux).
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected);
// The same, for at most `timeout`.
void futex_wait_for(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout);
void futex_wake_all(std::atomic<uint32_t>* word);

}  // namespace zl
