#include "engine/output_stage.h"

#include <sched.h>

#include <algorithm>
#include <bit>

#include "core/check.h"
#include "core/log.h"
#include "engine/inbox.h"
#include "engine/sequence.h"

namespace zl {
namespace {

// How long the idle stage spins before sleeping: short, because on a small
// machine a spinning stage takes a core from the forward pass.
constexpr int kIdleSpinIterations = 200;

// Napping (output_stage.h): a nap lasts an eighth of the last interval
// between two deliveries (about a step, when steps are large enough to reach
// the stage), within these bounds; so records wait about a sixteenth of a
// step for the stage on average, and an idle stage looks about eight times a
// step. After four intervals without records (within these bounds) it sleeps
// until woken.
constexpr std::chrono::microseconds kMinNap{50}, kMaxNap{1000};
constexpr std::chrono::milliseconds kMinNapWindow{50}, kMaxNapWindow{1000};

}  // namespace

OutputStage::OutputStage(std::function<void(RequestId)> on_stop_string, int32_t capacity,
                         uint32_t max_inline_records)
    : on_stop_string_(std::move(on_stop_string)),
      ring_(std::bit_ceil(static_cast<uint32_t>(std::max(capacity, 2)))),
      top_slab_(ring_.size() * kMaxTopLogprobs),
      mask_(static_cast<uint32_t>(ring_.size()) - 1),
      max_inline_records_(max_inline_records),
      write_limit_(static_cast<uint32_t>(ring_.size())) {}

OutputStage::~OutputStage() {
  publish();
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_seq_cst);
    wake();
    thread_.join();
  }
}

void OutputStage::start_thread() {
  thread_ = std::thread([this] {
    // A batch thread does not preempt others when it wakes: its naps end on
    // whichever core is free, not by taking the engine thread's (on 2 busy
    // cores, gaps with the engine switched out fell from ~9 to ~3 in 200).
    // Its share of CPU time is unchanged; sinks may hear a step up to a
    // scheduler tick later when every core is busy.
    const sched_param param{};
    if (sched_setscheduler(0, SCHED_BATCH, &param) != 0) log_warn("output stage: SCHED_BATCH refused");
    run();
  });
}

void OutputStage::push_finish(RequestOutput* out) { push(Record{{out}, kFinishToken, 0.0f, 0}, {}); }

void OutputStage::push_retire(Sequence* seq) {
  Record record{{nullptr}, kRetireToken, 0.0f, 0};
  record.retired = seq;
  push(record, {});
}

// Full as far as we know: look at read_ (a line the stage writes) only now,
// and make room (inline, deliver now; threaded, wait for the stage).
void OutputStage::make_room() {
  while (write_local_ - read_.load(std::memory_order_acquire) > mask_) {
    publish();
    if (write_local_ - read_.load(std::memory_order_acquire) > mask_) std::this_thread::yield();
  }
  write_limit_ = read_.load(std::memory_order_acquire) + mask_ + 1;
}

void OutputStage::copy_top(uint32_t slot, std::span<const TokenLogprob> top) {
  CHECK_LE(top.size(), size_t{kMaxTopLogprobs});
  std::copy(top.begin(), top.end(), top_slab_.begin() + size_t{slot} * kMaxTopLogprobs);
}

void OutputStage::publish() {
  const uint32_t published = write_.load(std::memory_order_relaxed);
  if (published == write_local_) return;
  // Few records and a stage with nothing left to do: delivering them here
  // costs less than waking the stage, or than waiting for its nap to end
  // (kInlineRecords).
  if ((!thread_.joinable() || write_local_ - published <= max_inline_records_) && try_lock_delivery()) {
    if (read_.load(std::memory_order_relaxed) == published) {
      deliver(published, write_local_);
      read_.store(write_local_, std::memory_order_relaxed);
      write_.store(write_local_, std::memory_order_relaxed);
      unlock_delivery();
      return;
    }
    unlock_delivery();
  }
  // seq_cst pairs with run(): either the stage sees the records before it
  // sleeps, or we see it sleeping and wake it.
  write_.store(write_local_, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst) == kAsleep) {
    num_wakes_.fetch_add(1, std::memory_order_relaxed);
    wake();
  }
}

void OutputStage::wake() {
  wakeups_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&wakeups_);
}

bool OutputStage::try_lock_delivery() { return !delivering_.exchange(true, std::memory_order_acquire); }

void OutputStage::unlock_delivery() { delivering_.store(false, std::memory_order_release); }

void OutputStage::run() {
  using std::chrono::steady_clock;
  steady_clock::time_point last_delivery;  // long ago: the first idle sleeps until woken
  steady_clock::duration interval = kMaxNap;
  while (true) {
    bool pending = write_.load(std::memory_order_acquire) != read_.load(std::memory_order_relaxed);
    for (int i = 0; !pending && i < kIdleSpinIterations; ++i) {
      __builtin_ia32_pause();
      pending = write_.load(std::memory_order_acquire) != read_.load(std::memory_order_relaxed);
    }
    if (pending) {
      if (try_lock_delivery()) {
        const steady_clock::time_point now = steady_clock::now();
        interval = now - last_delivery;
        last_delivery = now;
        const uint32_t read = read_.load(std::memory_order_relaxed);
        read_.store(deliver(read, write_.load(std::memory_order_acquire)), std::memory_order_release);
        unlock_delivery();
      }
      continue;
    }
    if (stop_.load(std::memory_order_acquire)) return;
    idle(last_delivery, interval);
  }
}

void OutputStage::idle(std::chrono::steady_clock::time_point last_delivery, std::chrono::nanoseconds interval) {
  const std::chrono::nanoseconds window = std::clamp<std::chrono::nanoseconds>(4 * interval, kMinNapWindow, kMaxNapWindow);
  const bool nap = std::chrono::steady_clock::now() - last_delivery < window;
  // A wake after `seen` was read changes wakeups_, so the wait returns.
  const uint32_t seen = wakeups_.load(std::memory_order_seq_cst);
  sleeping_.store(nap ? kNapping : kAsleep, std::memory_order_seq_cst);
  if (write_.load(std::memory_order_seq_cst) == read_.load(std::memory_order_relaxed) &&
      !stop_.load(std::memory_order_seq_cst)) {
    if (nap) {
      futex_wait_for(&wakeups_, seen, std::clamp<std::chrono::nanoseconds>(interval / 8, kMinNap, kMaxNap));
    } else {
      futex_wait(&wakeups_, seen);
    }
  }
  sleeping_.store(kAwake, std::memory_order_relaxed);
}

uint32_t OutputStage::deliver(uint32_t read, uint32_t end) {
  for (; read != end; ++read) {
    const uint32_t slot = read & mask_;
    const Record& r = ring_[slot];
    if (r.token == kRetireToken) {
      delete r.retired;
    } else if (r.token == kFinishToken) {
      deliver_finish(r.out);
    } else {
      deliver_token(r, &top_slab_[size_t{slot} * kMaxTopLogprobs]);
    }
  }
  return read;
}

void OutputStage::deliver_token(const Record& r, const TokenLogprob* top) {
  RequestOutput* out = r.out;
  if (out->stops.stopped()) return;  // after a stop string: the engine is finishing it
  TokenEvent event;
  event.id = out->id;
  event.token = r.token;
  event.text = out->stops.push(out->decoder.push(r.token));
  event.logprob = r.logprob;
  event.top_logprobs.assign(top, top + r.num_top);
  out->num_delivered++;
  out->sink->on_token(event);
  if (out->stops.stopped()) on_stop_string_(out->id);
}

void OutputStage::deliver_finish(RequestOutput* out) {
  std::unique_ptr<RequestOutput> owned(out);
  FinishEvent& event = out->finish;
  if (out->stops.stopped()) {
    // The stop string came first, whatever ended the request in the engine
    // since; what followed it was never sent, and its tail is dropped.
    event.reason = FinishReason::kStop;
    event.stop_detail = "stop string";
    event.stop_string = out->stops.matched();
    event.num_generated_tokens = out->num_delivered;
  } else {
    // Text held back (partial characters, a possible stop prefix) ends here.
    event.remaining_text = out->stops.push(out->decoder.flush()) + out->stops.flush();
  }
  out->sink->on_finish(event);
}

}  // namespace zl
