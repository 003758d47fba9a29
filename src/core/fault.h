// Fault injection: named places where the code can be told to fail on
// purpose, so tests and the soak can prove what follows a failure that real
// runs produce rarely (a forward pass that errors, a KV pool that says "no
// memory"): every request still ends with one terminal event and gives its
// KV back. The same failure path as the real one runs; only its cause is
// faked.
//
//   fault::arm(fault::Point::kForward, {.after = 3, .count = 1});  // 4th pass fails
//   ZEROLAYER_FAULTS=forward:every=50,kv_admit:after=10:count=5 zerolayer serve ...
//
// Disarmed (always, unless a test or ZEROLAYER_FAULTS arms it), a check is
// one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "zerolayer/status.h"

namespace zl::fault {

enum class Point : uint8_t {
  kForward,   // "forward": LlamaModel::forward returns an internal error
  kKvAdmit,   // "kv_admit": KvPool::admit answers kWait (no memory now)
  kKvGrow,    // "kv_grow": KvPool::ensure_capacity cannot add a block
  kKvMap,     // "kv_map": KvCache::create cannot map the pool (mmap fails)
  kKvPopulate,  // "kv_populate": KvCache::populate cannot commit it (ENOMEM)
  kCount,
};

// Of a point's hits from now on (numbered 0, 1, ...), hit h fails when
// h >= after, (h - after) % every == 0 and fewer than `count` have failed.
struct Plan {
  int64_t after = 0;
  int64_t every = 1;
  int64_t count = INT64_MAX;
};

void arm(Point point, const Plan& plan);
void disarm_all();
// Hits of `point` that failed since it was armed.
int64_t num_failed(Point point);

// "point[:after=N][:every=N][:count=N],..." as above; arms nothing unless
// the whole spec parses. Errors name the part that is wrong.
Status arm_from_spec(std::string_view spec);
// arm_from_spec($ZEROLAYER_FAULTS) when set and non-empty; returns the spec
// armed ("" when none) so the caller can say so loudly.
StatusOr<std::string> arm_from_env();

namespace internal {
extern std::atomic<bool> g_any_armed;
bool should_fail_slow(Point point);
}  // namespace internal

// Whether this hit of `point` fails. Any thread.
inline bool should_fail(Point point) {
  if (!internal::g_any_armed.load(std::memory_order_relaxed)) [[likely]] return false;
  return internal::should_fail_slow(point);
}

}  // namespace zl::fault
