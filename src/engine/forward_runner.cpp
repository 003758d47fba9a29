#include "engine/forward_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "core/check.h"
#include "engine/inbox.h"

namespace zl {
namespace {

// How long the runner spins for the next job before sleeping: 2000 pauses,
// tens of µs, so that a job submitted right after the last one ended
// starts without a futex wake, while an idle runner soon leaves the cores
// to the compute workers.
constexpr int kSpinIterations = 2000;

// Sampled rows are drawn on the calling thread alone below this many logits
// in all: a draw costs a few µs on a small vocabulary and milliseconds on a
// large one (top-p sorts it), the pool's wake-up tens of µs.
constexpr int64_t kMinLogitsToSpread = int64_t{1} << 18;

// One sleep of the waiting side of a handshake: raise `sleeping` (the other
// side wakes it only when it sees that, both seq_cst), then sleep on `word`
// unless it has moved from `value` meanwhile; a negative timeout is none.
// Returns the word's value after.
uint32_t sleep_on(std::atomic<uint32_t>* word, uint32_t value, std::atomic<uint32_t>* sleeping,
                  std::chrono::nanoseconds timeout = std::chrono::nanoseconds(-1)) {
  sleeping->store(1, std::memory_order_seq_cst);
  const uint32_t seen = word->load(std::memory_order_seq_cst);
  if (seen == value) {
    if (timeout.count() < 0) {
      futex_wait(word, seen);
    } else {
      futex_wait_for(word, seen, timeout);
    }
  }
  sleeping->store(0, std::memory_order_relaxed);
  return word->load(std::memory_order_acquire);
}

}  // namespace

ForwardRunner::ForwardRunner(LlamaModel& model, KvCache& cache)
    : model_(model), cache_(cache), thread_([this] { run(); }) {}

ForwardRunner::~ForwardRunner() {
  while (outstanding() > 0) wait();
  // A count with no job behind it: the runner wakes (the futex word changed)
  // and, seeing stop_, returns.
  stop_.store(true, std::memory_order_seq_cst);
  submitted_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&submitted_);
  thread_.join();
}

void ForwardRunner::submit(ForwardJob* job) {
  const uint32_t n = submitted_.load(std::memory_order_relaxed);
  CHECK(n - returned_ < 2) << "more than two forward passes outstanding";
  jobs_[n % 2] = job;
  submitted_.store(n + 1, std::memory_order_seq_cst);  // publishes the job
  if (runner_sleeping_.load(std::memory_order_seq_cst)) futex_wake_all(&submitted_);
}

// With a job queued behind the awaited one, the runner starts it without a
// wake-up: a futex wake there cost the next pass 5-20 µs at 1-16 sequences
// (the syscall, and the woken engine thread taking the runner's core before
// the pass started). So the engine sleeps until 10 µs after the pass should
// end (as long as the shorter of the last two took), then checks again
// every sixteenth of that, but not more often than every 20 µs. With
// nothing queued, the runner would idle anyway, and it wakes the engine. (A
// pass much shorter than the two before it can so be published a pass late.)
ForwardJob* ForwardRunner::wait() {
  CHECK(outstanding() > 0) << "no forward pass to wait for";
  // done_ - returned_ is 0, 1 or 2: the awaited job is done once done_ has
  // moved past returned_ (compared so, the counters may wrap).
  uint32_t done = done_.load(std::memory_order_acquire);
  if (done == returned_ && outstanding() == 2) {
    const Clock::duration poll = std::max<Clock::duration>(std::chrono::microseconds(20), last_duration_ / 16);
    Clock::time_point until = last_end_ + last_duration_ + std::chrono::microseconds(10);
    while (done == returned_ && outstanding() == 2) {
      const Clock::time_point now = Clock::now();
      if (until <= now) until = now + poll;
      done = sleep_on(&done_, returned_, &engine_sleeping_,
                      std::chrono::duration_cast<std::chrono::nanoseconds>(until - now));
    }
  }
  while (done == returned_) done = sleep_on(&done_, returned_, &engine_sleeping_);
  ForwardJob* job = jobs_[returned_++ % 2];
  last_end_ = job->end;
  // The shorter of the last two: one pass slowed down (its threads taken by
  // other work) should not make the engine sleep through the next.
  const Clock::duration duration = job->end - job->start;
  last_duration_ = std::min(duration, previous_duration_);
  previous_duration_ = duration;
  return job;
}

bool ForwardRunner::sleep_until(Clock::time_point deadline) {
  CHECK(outstanding() == 1) << "sleep_until() wants exactly one forward pass outstanding";
  // With nothing queued behind the job, the runner wakes a sleeping engine
  // when it ends (run()).
  uint32_t done = done_.load(std::memory_order_acquire);
  for (Clock::time_point now = Clock::now(); done == returned_ && now < deadline; now = Clock::now())
    done = sleep_on(&done_, returned_, &engine_sleeping_, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now));
  return done != returned_;
}

void ForwardRunner::run() {
  uint32_t next = 0;
  const int32_t* prev_tokens = nullptr;  // the last job's next tokens (null: it failed)
  while (true) {
    uint32_t submitted = submitted_.load(std::memory_order_acquire);
    for (int spin = 0; submitted == next && spin < kSpinIterations; ++spin) {
      __builtin_ia32_pause();
      submitted = submitted_.load(std::memory_order_acquire);
    }
    while (submitted == next) submitted = sleep_on(&submitted_, next, &runner_sleeping_);
    if (stop_.load(std::memory_order_acquire)) return;
    ForwardJob* job = jobs_[next % 2];
    // A failed pass wrote no tokens: its rows' sequences end with an error,
    // and the rows fed from them compute a valid token that nobody reads.
    for (const FeedRow& feed : job->feeds)
      job->tokens[static_cast<size_t>(feed.token_index)] = prev_tokens ? prev_tokens[feed.source_row] : 0;
    run_forward_job(model_, cache_, *job);
    prev_tokens = job->status.ok() ? job->next_tokens : nullptr;
    done_.store(++next, std::memory_order_seq_cst);
    if (submitted_.load(std::memory_order_seq_cst) == next && engine_sleeping_.load(std::memory_order_seq_cst))
      futex_wake_all(&done_);
  }
}

namespace {

// The engine thread fills the masks as soon as the pass before has ended,
// so this rarely waits long.
void wait_for_masks(ForwardJob& job) {
  std::atomic_ref<uint32_t> ready(job.masks_ready);
  for (int spins = 0; !ready.load(std::memory_order_acquire); ++spins) {
    if (spins < 1000) {
      __builtin_ia32_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace

void run_forward_job(LlamaModel& model, KvCache& cache, ForwardJob& job) {
  job.start = Clock::now();
  job.copy_ns = 0;
  if (!job.block_moves.empty()) {
    for (const BlockMove& move : job.block_moves) cache.copy_block(move.src, move.dst);
    job.copy_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - job.start).count();
  }
  if (job.batch.tokens.empty()) {
    job.end = Clock::now();
    return;
  }
  job.status = model.forward(job.batch, cache, job.logits, job.next_tokens, job.sampled.empty());
  if (job.masks_by_engine) wait_for_masks(job);
  if (job.status.ok() && !job.sampled.empty()) {
    const size_t vocab = static_cast<size_t>(model.config().vocab_size);
    auto draw = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const SampledRow& s = job.sampled[static_cast<size_t>(i)];
        const size_t row = static_cast<size_t>(s.row);
        const SampleResult r = s.sampler->sample(job.logits + row * vocab);
        job.next_tokens[row] = r.token;
        job.samples[row] = RowSample{r.logprob, static_cast<int32_t>(r.top.size()), r.grammar};
        std::copy(r.top.begin(), r.top.end(), job.top + row * kMaxTopLogprobs);
      }
    };
    const int64_t n = static_cast<int64_t>(job.sampled.size());
    if (n < 2 || n * static_cast<int64_t>(vocab) < kMinLogitsToSpread) {
      draw(0, n);
    } else {
      model.pool().parallel_for(n, draw);
    }
  }
  job.end = Clock::now();
}

}  // namespace zl
