// How long a consumer of a response ring spins before it sleeps on the
// futex, header-only for the C client library (which does not link zl).
//
// A futex wake-up costs ~5 us on an idle core and up to a scheduler time
// slice on a busy one; reading a record that lands while spinning costs a
// cache-line hand-over (~0.5 us). So a stream whose records come at a steady,
// short interval (an engine step) is best read by spinning through the
// interval, and one whose interval is long (a real model's step, or many
// clients sharing few cores) by sleeping at once. The policy learns the
// interval from the records' sink_ns (the server's clock, so the client's
// own delays do not count) and backs off when spinning gets the spinner
// descheduled. All times are CLOCK_MONOTONIC nanoseconds; one thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace zl::shm {

class SpinPolicy {
 public:
  // A spin loop that finds this much time gone between two clock reads
  // (~64 pauses apart) was descheduled.
  static constexpr uint64_t kPreemptedNs = 50'000;
  // The server writes a long piece's TEXT records and the terminal record
  // after the last token back to back, closer than this.
  static constexpr uint64_t kBurstSpinNs = 2'000;
  static constexpr uint64_t kBackoffMinNs = 100'000'000;     // no adaptive spin after a preemption,
  static constexpr uint64_t kBackoffMaxNs = 10'000'000'000;  //   doubling per repeat up to this,
  static constexpr uint32_t kCleanSpinsToHalve = 256;       //   halving after this many clean spins

  // `fixed_ns`: the spin while no interval is known; `adaptive_ns`: the
  // longest spin through a stream's interval, 0: never more than fixed_ns.
  void set_fixed_ns(uint64_t ns) { fixed_ns_ = ns; }
  void set_adaptive_ns(uint64_t ns) { adaptive_ns_ = ns; }
  // Whether more threads are runnable than there are CPUs (sampled by the
  // caller): then a spin only takes a CPU from them, the engine's included,
  // and gets descheduled itself, so no adaptive spin.
  void set_cpus_busy(bool busy) { cpus_busy_ = busy; }

  // When a wait entered at `start` stops spinning: after the fixed spin
  // without an interval to go by; with one, when the next record is due (two
  // mean intervals after the last, or one from now if that is past) if that
  // is within the adaptive bound; else after a burst's spin.
  uint64_t spin_deadline(uint64_t start) const {
    uint64_t fixed = start + fixed_ns_;
    if (adaptive_ns_ == 0 || last_sink_ns_ == 0 || gap_ns_ == 0) return fixed;
    uint64_t due = std::max(last_sink_ns_ + 2 * gap_ns_, start + gap_ns_);
    if (due - start <= adaptive_ns_ && start >= backoff_until_ns_ && !cpus_busy_) return std::max(due, fixed);
    return start + std::min(fixed_ns_, kBurstSpinNs);
  }

  // A record was read. Its interval from the previous record of a stream
  // (not across a terminal record, where the next request starts with a
  // prefill) feeds a running mean (weight 1/8).
  void on_record(uint64_t sink_ns, bool terminal) {
    if (last_sink_ns_ != 0 && sink_ns > last_sink_ns_) {
      uint64_t gap = sink_ns - last_sink_ns_;
      gap_ns_ = gap_ns_ == 0 ? gap : gap_ns_ - gap_ns_ / 8 + gap / 8;
    }
    last_sink_ns_ = terminal ? 0 : sink_ns;
  }

  // A spin was descheduled (more runnable threads than cores, where spinning
  // only slows the engine and the other clients): no adaptive spin for a while.
  void on_preempted(uint64_t now) {
    backoff_ns_ = std::clamp(backoff_ns_ * 2, kBackoffMinNs, kBackoffMaxNs);
    backoff_until_ns_ = now + backoff_ns_;
    num_clean_spins_ = 0;
  }
  // A spin read its record undisturbed.
  void on_clean_spin() {
    if (++num_clean_spins_ < kCleanSpinsToHalve) return;
    num_clean_spins_ = 0;
    backoff_ns_ /= 2;
  }

  uint64_t gap_ns() const { return gap_ns_; }
  uint64_t backoff_ns() const { return backoff_ns_; }

 private:
  uint64_t fixed_ns_ = 20'000;
  uint64_t adaptive_ns_ = 250'000;
  uint64_t gap_ns_ = 0;            // running mean of a stream's record interval
  uint64_t last_sink_ns_ = 0;      // of the last record; 0: none, or it was terminal
  uint64_t backoff_ns_ = 0;
  uint64_t backoff_until_ns_ = 0;
  uint32_t num_clean_spins_ = 0;   // since the last preemption or halving
  bool cpus_busy_ = false;
};

// The number of runnable threads in /proc/loadavg's text ("0.52 0.58 0.59
// 3/467 12345": the 4th field's numerator, this reader included), or -1.
inline int runnable_from_loadavg(std::string_view text) {
  for (int field = 0; field < 3; ++field) {
    size_t space = text.find(' ');
    if (space == std::string_view::npos) return -1;
    text.remove_prefix(space + 1);
  }
  size_t slash = text.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash > 9) return -1;
  int n = 0;
  for (char c : text.substr(0, slash)) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace zl::shm
