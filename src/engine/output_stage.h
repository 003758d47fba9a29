// The output stage: turns the engine's sampled token ids into the events a
// request's sink receives (text pieces, stop strings, the terminal event), on
// a thread of its own, so the engine thread's time between two forward passes
// holds only sampling and scheduling.
//
// Hand-over: the engine thread appends fixed 24-byte records (token, finish,
// or a finished Sequence to free; a token's top logprobs go to the record's slot of a slab beside
// the ring) to a single-producer single-consumer ring and publishes them once
// per step (one store; a futex wake only if the stage sleeps for good). The
// stage detokenizes, matches stop strings and calls the sink, in order per
// request. A stop string is found here, after the engine has moved on: the
// stage stops emitting at once and asks the engine (on_stop_string) to
// finish the request; the terminal event still comes from the engine's
// finish record, so timings and KV release stay the engine's, and exactly
// one FinishEvent is sent. Tokens the engine sampled in between are dropped.
//
// Waking the stage costs the engine more than the syscall: on a machine with
// no idle core the woken stage (or whatever the scheduler runs instead) takes
// the engine thread's core, and the engine sits out the rest of its
// scheduling gap (bench/results/code_notes.md#output-stage). So while
// records keep coming the stage naps: it
// sleeps a fraction of the interval between its deliveries and looks again,
// and the engine never wakes it. Only after a few intervals without records
// does it sleep for good, and the next publish wakes it.
//
// A step with few records (a lone stream's), while the stage is idle, is
// delivered by the engine thread itself: cheaper than waking the stage.
// Either way one thread at a time delivers, in ring order. Without
// start_thread() (tests driving EngineCore directly) publish() always
// delivers on the calling thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "tokenizer/tokenizer.h"
#include "zerolayer/request.h"

namespace zl {

struct Sequence;

// One request's output side. Built by submit() with the request; the engine
// fills `finish` before its finish record; the stage owns it from that record
// on and deletes it after the sink's on_finish.
struct RequestOutput {
  RequestOutput(RequestId id_in, std::shared_ptr<EventSink> sink_in, std::vector<std::string> stop_strings,
                const Tokenizer& tokenizer, bool skip_special, const ContinuationPieces* pieces,
                const std::vector<int32_t>& prompt)
      : id(id_in), sink(std::move(sink_in)), decoder(tokenizer, skip_special, pieces), stops(std::move(stop_strings)) {
    // Prime the decoder with the prompt so the first token decodes as a
    // continuation (SentencePiece strips a leading space only at the start).
    for (int32_t token : prompt) (void)decoder.push(token);
  }

  const RequestId id;
  const std::shared_ptr<EventSink> sink;
  // Output stage only.
  StreamDecoder decoder;
  StopMatcher stops;
  int32_t num_delivered = 0;  // tokens passed to the sink
  // Engine thread until its finish record, then the stage's.
  FinishEvent finish;
};

class OutputStage {
 public:
  // Up to this many records (a lone stream's step: its token, and at its
  // end the finish and retire records) the engine thread delivers them
  // itself when the stage is idle, rather than wake the stage (a futex wake,
  // and on busy cores a wait for it to run) or leave them for the end of
  // its nap, which delays a lone request's round trip. Delivering costs the
  // engine about a microsecond a record inside the scheduling gap, so more
  // records go to the stage (bench/results/code_notes.md#output-stage).
  static constexpr uint32_t kInlineRecords = 3;

  // on_stop_string(id) is called on the delivering thread when a stop string
  // ends request `id`; the engine must then finish it (it may already have).
  // `capacity`: records the ring holds (rounded up to a power of two).
  // `max_inline_records`: see kInlineRecords; 0 keeps delivery (detokenizing,
  // which allocates, and the sinks) off the engine thread once start_thread() ran.
  OutputStage(std::function<void(RequestId)> on_stop_string, int32_t capacity,
              uint32_t max_inline_records = kInlineRecords);
  ~OutputStage();  // delivers what is published, then joins the thread
  OutputStage(const OutputStage&) = delete;
  OutputStage& operator=(const OutputStage&) = delete;

  // Delivers on a thread of its own from now on.
  void start_thread();

  // Times publish() woke the stage (tests: none while records keep coming).
  uint64_t num_wakes() const { return num_wakes_.load(std::memory_order_relaxed); }

  // Engine thread. `top` (at most kMaxTopLogprobs entries) is copied.
  void push_token(RequestOutput* out, int32_t token, float logprob, std::span<const TokenLogprob> top) {
    push(Record{{out}, token, logprob, static_cast<int32_t>(top.size())}, top);
  }
  // Engine thread: out->finish is filled; the stage owns `out` from here on.
  void push_finish(RequestOutput* out);
  // Engine thread: a finished Sequence (engine/sequence.h) the engine is done
  // with, freed by whoever delivers this record: freeing one on the engine
  // thread cost ~0.5 µs (a dozen heap blocks and the sink's shared count).
  void push_retire(Sequence* seq);
  // Engine thread: makes the records pushed so far visible to the stage.
  void publish();
  // Engine thread: asks for the ring lines the next `num_records` pushes
  // write. They are cold (a lap of the ring ago, read on the stage's core
  // since), and stores that miss wait on each other; prefetches do not.
  void prefetch_pushes(uint32_t num_records) const {
    static_assert(2 * sizeof(Record) <= 64, "every other record starts on each line");
    for (uint32_t i = 0; i <= num_records; i += 2) __builtin_prefetch(&ring_[(write_local_ + i) & mask_], 1);
  }

 private:
  struct Record {
    union {
      RequestOutput* out;
      Sequence* retired;               // kRetireToken
    };
    int32_t token;                     // kFinishToken: the finish record; kRetireToken
    float logprob;
    int32_t num_top;                   // entries in the record's top_slab_ slot
  };
  static constexpr int32_t kFinishToken = -1, kRetireToken = -2;
  // sleeping_ values: awake, asleep until woken, napping (back by itself).
  static constexpr uint32_t kAwake = 0, kAsleep = 1, kNapping = 2;

  // Inline: the engine pushes a record for every token of every step.
  void push(const Record& record, std::span<const TokenLogprob> top) {
    if (write_local_ == write_limit_) make_room();
    const uint32_t slot = write_local_ & mask_;
    ring_[slot] = record;
    if (!top.empty()) copy_top(slot, top);
    ++write_local_;
  }
  // The ring is full as far as the engine knew: look at read_ and wait for room.
  void make_room();
  void copy_top(uint32_t slot, std::span<const TokenLogprob> top);
  void run();
  // Stage thread, nothing to deliver: naps or sleeps until woken.
  void idle(std::chrono::steady_clock::time_point last_delivery, std::chrono::nanoseconds interval);
  void wake();
  // Whoever delivers (the stage, or the engine for a few records) holds this.
  bool try_lock_delivery();
  void unlock_delivery();
  // Delivers records [read, end); returns end.
  uint32_t deliver(uint32_t read, uint32_t end);
  void deliver_token(const Record& r, const TokenLogprob* top);
  void deliver_finish(RequestOutput* out);

  const std::function<void(RequestId)> on_stop_string_;
  std::vector<Record> ring_;
  std::vector<TokenLogprob> top_slab_;       // [ring_.size(), kMaxTopLogprobs] each record's top logprobs
  const uint32_t mask_;
  const uint32_t max_inline_records_;
  uint32_t write_local_ = 0;                 // engine thread: pushed, maybe unpublished
  uint32_t write_limit_;                     // engine thread: the ring is full at this write_local_, or later
  alignas(64) std::atomic<uint32_t> write_{0};  // published
  std::atomic<uint32_t> sleeping_{kAwake};      // kAsleep: publish() must wake the stage
  std::atomic<uint32_t> wakeups_{0};            // bumped by every wake; the futex word
  std::atomic<uint64_t> num_wakes_{0};
  alignas(64) std::atomic<uint32_t> read_{0};   // delivered (the engine waits on it when full)
  std::atomic<bool> delivering_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace zl
