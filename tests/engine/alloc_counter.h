// Counts calls of the global operator new, for tests that check a hot path
// never reaches the allocator (issue 3: "after warm-up a step allocates
// nothing"). It defines the replaceable global operator new and delete, which
// a program may define only once and never inline: include it in exactly one
// file of a test binary, and keep other tests out of that binary.
//
// Counts: every thread's allocations (g_num_allocations), and this thread's
// allocations and frees (t_num_allocations, t_num_frees), the latter paused
// inside an UncountedScope (code the test runs on a counted thread on
// someone else's behalf, such as an event sink).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace zl::test {

inline std::atomic<int64_t> g_num_allocations{0};
inline thread_local int64_t t_num_allocations = 0;
inline thread_local int64_t t_num_frees = 0;
inline thread_local int32_t t_num_pauses = 0;

class UncountedScope {
 public:
  UncountedScope() { ++t_num_pauses; }
  ~UncountedScope() { --t_num_pauses; }
  UncountedScope(const UncountedScope&) = delete;
  UncountedScope& operator=(const UncountedScope&) = delete;
};

inline void count_allocation() {
  g_num_allocations.fetch_add(1, std::memory_order_relaxed);
  if (t_num_pauses == 0) ++t_num_allocations;
}

inline void count_free(void* p) {
  if (p != nullptr && t_num_pauses == 0) ++t_num_frees;
}

}  // namespace zl::test

void* operator new(std::size_t size) {
  zl::test::count_allocation();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// The node pools of engine/block_runs.h allocate through the aligned form.
void* operator new(std::size_t size, std::align_val_t align) {
  zl::test::count_allocation();
  size_t a = static_cast<size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
// GCC inlines these into gtest's `new`/`delete` pairs and then takes the
// free() of an operator-new pointer for a mismatch; here they do match.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  zl::test::count_free(p);
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  zl::test::count_free(p);
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  zl::test::count_free(p);
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  zl::test::count_free(p);
  std::free(p);
}
#pragma GCC diagnostic pop
