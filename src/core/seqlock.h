// A seqlock over a 64-bit sequence word that may live in shared memory: one
// writer, any number of readers, no locks and no writes by readers (so a
// reader may map the memory read-only). The writer makes the word odd, writes
// the data, makes it even again; a reader copies the data and keeps the copy
// only if the word was even and unchanged around the copy.
//
// The data is written and copied in 8-byte words with relaxed atomic stores
// and loads (the region's sections are multiples of 8 bytes), so a racing
// copy is merely stale, never undefined (plain stores would race with the
// loads: ThreadSanitizer reports them); the fences order the words against
// the sequence word (H.-J. Boehm, "Can seqlocks get along with programming
// language memory models?", 2012).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>

namespace zl {

inline void seqlock_write_begin(uint64_t& sequence) {
  std::atomic_ref<uint64_t> word(sequence);
  word.store(word.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}

inline void seqlock_write_end(uint64_t& sequence) {
  std::atomic_ref<uint64_t> word(sequence);
  word.store(word.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// Between seqlock_write_begin and _end: copies `bytes` (a multiple of 8)
// from `src` into the section's data at `dst` (8-byte aligned).
inline void seqlock_store(void* dst, const void* src, size_t bytes) {
  uint64_t* words = static_cast<uint64_t*>(dst);
  const auto* from = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) {
    uint64_t w;
    std::memcpy(&w, from + i * sizeof(uint64_t), sizeof(w));
    __atomic_store_n(words + i, w, __ATOMIC_RELAXED);
  }
}

// Copies `bytes` (a multiple of 8) from `section`, whose first word is the
// sequence, into `out`. False when every one of `max_tries` attempts found
// the writer inside the section (it may have died there).
inline bool seqlock_read(const void* section, void* out, size_t bytes, int max_tries) {
  const uint64_t* src = static_cast<const uint64_t*>(section);
  uint64_t* dst = static_cast<uint64_t*>(out);
  const size_t num_words = bytes / sizeof(uint64_t);
  for (int attempt = 0; attempt < max_tries; ++attempt) {
    if (attempt > 0) std::this_thread::yield();  // let a writer that was preempted finish
    uint64_t before = __atomic_load_n(src, __ATOMIC_ACQUIRE);
    if (before & 1) continue;
    for (size_t i = 0; i < num_words; ++i) dst[i] = __atomic_load_n(src + i, __ATOMIC_RELAXED);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__atomic_load_n(src, __ATOMIC_RELAXED) == before) return true;
  }
  return false;
}

}  // namespace zl
