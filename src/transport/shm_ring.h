// The rings of zerolayer/shm_protocol.h as C++ operations, header-only so
// that the server (zl) and the C client library (which does not link zl)
// share one implementation: segment layout checks, the bounded
// sequence-per-slot queue (push by any producer, pop by the one consumer),
// shared futex wait/wake, and the monotonic clock both sides compare.
//
// Everything here treats the segment as hostile: positions and sequence
// numbers read from it only select slots modulo the ring size, and every
// loop that depends on them is bounded.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "zerolayer/shm_protocol.h"

namespace zl::shm {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

template <typename T>
std::atomic_ref<T> atomic(T& word) {
  return std::atomic_ref<T>(word);
}

// Shared (inter-process) futex: FUTEX_WAIT, not the _PRIVATE variant.
inline void futex_wait(uint32_t* word, uint32_t expected, uint64_t timeout_ns) {
  timespec ts{time_t(timeout_ns / 1000000000ull), long(timeout_ns % 1000000000ull)};
  syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}
inline void futex_wake(uint32_t* word) { syscall(SYS_futex, word, FUTEX_WAKE, 0x7fffffff, nullptr, nullptr, 0); }

// Producer side of a wake-up: after publishing, wake the consumer if it said
// it may sleep. The fence pairs with the consumer's (sleeping = 1; fence;
// re-check) so that one of the two always sees the other. The producer that
// takes `sleeping` from 1 to 0 makes the one syscall of this sleep; records
// published after it (a burst, or other producers) cost a load, no syscall.
// Returns whether it woke the consumer.
inline bool wake_if_sleeping(uint32_t& sleeping, uint32_t& futex_word) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (atomic(sleeping).load(std::memory_order_relaxed) == 0 ||
      atomic(sleeping).exchange(0, std::memory_order_seq_cst) == 0)
    return false;
  atomic(futex_word).fetch_add(1, std::memory_order_seq_cst);
  futex_wake(&futex_word);
  return true;
}

// Copies the header at `mapped` into `out` (the caller's private copy, to be
// checked once and then trusted); true if its magic was stored, which the
// creator does last, so the fields copied after it are complete.
inline bool snapshot_header(const void* mapped, zl_shm_header* out) {
  const bool has_magic =
      __atomic_load_n(&static_cast<const zl_shm_header*>(mapped)->magic, __ATOMIC_ACQUIRE) == ZL_SHM_MAGIC;
  std::memcpy(out, mapped, sizeof(*out));
  return has_magic;
}

// Pointers into a mapped segment. The geometry (offsets, counts, sizes, the
// server's identity) is copied once out of a checked header into private
// members: any client can write the shared header, so after adopt() only its
// atomic words (positions, futexes, heartbeat, state) are read from it.
class Layout {
 public:
  Layout() = default;

  // Why a header is unusable, or nullptr. `mapped_bytes` is what the caller mapped.
  static const char* check(const zl_shm_header& h, uint64_t mapped_bytes) {
    if (h.magic != ZL_SHM_MAGIC) return "bad magic (not a zerolayer segment)";
    if (h.version != ZL_SHM_VERSION) return "unsupported protocol version";
    if (h.header_bytes != ZL_SHM_HEADER_BYTES || h.client_bytes != ZL_SHM_CLIENT_BYTES ||
        h.request_slot_bytes != ZL_SHM_REQUEST_SLOT_BYTES || h.response_slot_bytes != ZL_SHM_RESPONSE_SLOT_BYTES)
      return "record sizes differ from this build's protocol";
    if (h.total_bytes > mapped_bytes) return "segment smaller than its header says";
    if (!is_pow2(h.request_ring_slots) || !is_pow2(h.response_ring_slots) || h.num_clients == 0 ||
        h.num_clients > 4096)
      return "bad ring or client counts";
    if (h.response_ring_bytes != uint64_t(h.response_ring_slots) * h.response_slot_bytes) return "bad ring size";
    if (!inside(h.client_table_offset, uint64_t(h.num_clients) * h.client_bytes, h.total_bytes) ||
        !inside(h.request_ring_offset, uint64_t(h.request_ring_slots) * h.request_slot_bytes, h.total_bytes) ||
        !inside(h.response_rings_offset, uint64_t(h.num_clients) * h.response_ring_bytes, h.total_bytes) ||
        !inside(h.stats_offset, h.stats_bytes, h.total_bytes))
      return "a region lies outside the segment";
    if (h.stats_offset % 4096 != 0) return "the stats region is not page-aligned";
    return nullptr;
  }

  // The layout of the segment mapped at `base` (`mapped_bytes` long), from
  // one private copy of its header, checked; nullptr, or why it is unusable.
  static const char* adopt(void* base, uint64_t mapped_bytes, Layout* out) {
    if (mapped_bytes < sizeof(zl_shm_header)) return "segment smaller than a header";
    zl_shm_header copy;
    snapshot_header(base, &copy);  // check() tells a missing magic
    if (const char* why = check(copy, mapped_bytes)) return why;
    *out = Layout(base, copy);
    return nullptr;
  }

  // `h` is the header as its creator wrote it (the server's own copy).
  Layout(void* base, const zl_shm_header& h)
      : base_(static_cast<uint8_t*>(base)), client_table_offset_(h.client_table_offset),
        request_ring_offset_(h.request_ring_offset), response_rings_offset_(h.response_rings_offset),
        response_ring_bytes_(h.response_ring_bytes), stats_offset_(h.stats_offset), stats_bytes_(h.stats_bytes),
        server_start_ns_(h.server_start_ns), num_clients_(h.num_clients), request_ring_slots_(h.request_ring_slots),
        response_ring_slots_(h.response_ring_slots), max_inflight_per_client_(h.max_inflight_per_client),
        server_pid_(h.server_pid) {}

  zl_shm_header& header() const { return *reinterpret_cast<zl_shm_header*>(base_); }
  zl_shm_client& client(uint32_t index) const {
    return reinterpret_cast<zl_shm_client*>(base_ + client_table_offset_)[index];
  }
  zl_shm_request_slot& request_slot(uint64_t pos) const {
    auto* slots = reinterpret_cast<zl_shm_request_slot*>(base_ + request_ring_offset_);
    return slots[pos & (request_ring_slots_ - 1)];
  }
  zl_shm_response_slot& response_slot(uint32_t client_index, uint64_t pos) const {
    auto* slots = reinterpret_cast<zl_shm_response_slot*>(base_ + response_rings_offset_ +
                                                          client_index * response_ring_bytes_);
    return slots[pos & (response_ring_slots_ - 1)];
  }
  uint8_t* base() const { return base_; }
  uint32_t num_clients() const { return num_clients_; }
  uint32_t request_ring_slots() const { return request_ring_slots_; }
  uint32_t response_ring_slots() const { return response_ring_slots_; }
  uint32_t max_inflight_per_client() const { return max_inflight_per_client_; }
  uint64_t stats_offset() const { return stats_offset_; }
  uint64_t stats_bytes() const { return stats_bytes_; }
  int32_t server_pid() const { return server_pid_; }
  uint64_t server_start_ns() const { return server_start_ns_; }

 private:
  static bool is_pow2(uint32_t n) { return n != 0 && (n & (n - 1)) == 0; }
  static bool inside(uint64_t offset, uint64_t bytes, uint64_t total) {
    return offset <= total && bytes <= total - offset;
  }
  uint8_t* base_ = nullptr;
  uint64_t client_table_offset_ = 0, request_ring_offset_ = 0, response_rings_offset_ = 0, response_ring_bytes_ = 0;
  uint64_t stats_offset_ = 0, stats_bytes_ = 0, server_start_ns_ = 0;
  uint32_t num_clients_ = 0, request_ring_slots_ = 1, response_ring_slots_ = 1, max_inflight_per_client_ = 0;
  int32_t server_pid_ = 0;
};

enum class PushResult { kOk, kFull, kLost };

// Claims the next position of a sequence-per-slot ring for one producer.
// `enqueue_pos` is the shared claim counter; `pending` (may be null) is set
// to pos + 1 before each claim attempt and cleared by publish(). `headroom`
// more slots must be free after the claimed one (slots reserved for others),
// else kFull. On kOk the slot for *pos is the caller's until publish().
template <typename Slot, typename SlotAt>
PushResult ring_claim(uint64_t& enqueue_pos, uint64_t* pending, SlotAt slot_at, uint64_t* pos,
                      uint32_t headroom = 0) {
  uint64_t p = atomic(enqueue_pos).load(std::memory_order_relaxed);
  for (int attempt = 0; attempt < 1024; ++attempt) {
    Slot& slot = slot_at(p);
    uint64_t seq = atomic(slot.sequence).load(std::memory_order_acquire);
    int64_t diff = int64_t(seq - p);
    if (diff == 0 && headroom > 0) {
      // The consumer frees in order, so if the last needed slot is free, all are.
      uint64_t far = p + headroom;
      if (atomic(slot_at(far).sequence).load(std::memory_order_acquire) != far) return PushResult::kFull;
    }
    if (diff == 0) {
      if (pending != nullptr) atomic(*pending).store(p + 1, std::memory_order_seq_cst);
      if (atomic(enqueue_pos).compare_exchange_weak(p, p + 1, std::memory_order_seq_cst)) {
        *pos = p;
        return PushResult::kOk;
      }
    } else if (diff < 0) {
      if (pending != nullptr) atomic(*pending).store(0, std::memory_order_relaxed);
      return PushResult::kFull;
    } else {
      p = atomic(enqueue_pos).load(std::memory_order_relaxed);
    }
  }
  if (pending != nullptr) atomic(*pending).store(0, std::memory_order_relaxed);
  return PushResult::kFull;  // sequences that never match: a corrupted ring, treated as full
}

// Publishes a claimed position; kLost if the consumer skipped it meanwhile
// (this producer was presumed dead).
template <typename Slot>
PushResult ring_publish(Slot& slot, uint64_t pos, uint64_t* pending) {
  uint64_t expected = pos;
  bool ok = atomic(slot.sequence).compare_exchange_strong(expected, pos + 1, std::memory_order_release,
                                                          std::memory_order_relaxed);
  if (pending != nullptr) atomic(*pending).store(0, std::memory_order_release);
  return ok ? PushResult::kOk : PushResult::kLost;
}

// Consumer: true if position `pos` is published. The caller copies the
// record out, then calls ring_release().
template <typename Slot>
bool ring_ready(Slot& slot, uint64_t pos) {
  return atomic(slot.sequence).load(std::memory_order_acquire) == pos + 1;
}
template <typename Slot>
void ring_release(Slot& slot, uint64_t pos, uint32_t num_slots) {
  atomic(slot.sequence).store(pos + num_slots, std::memory_order_release);
}

}  // namespace zl::shm
