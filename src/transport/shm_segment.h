// The server's side of a segment's lifetime: create it exclusively (mode
// 0600), replace a stale one left by a crashed server, lay out and initialize
// the regions of zerolayer/shm_protocol.h, and unlink it at the end.
//
// Stale means: a zerolayer header whose server pid is gone, whose heartbeat
// is older than ZL_SHM_DEAD_AFTER_NS or whose state is STOPPED; or an empty
// segment, or one with a zerolayer header but no magic, that stays so for
// 200 ms (a server that died between shm_open and writing its magic). A
// stale segment is replaced with a warning. A live one, or anything else
// (a header of zeros included), is left alone and start fails naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "transport/shm_ring.h"
#include "zerolayer/stats_protocol.h"
#include "zerolayer/status.h"

namespace zl {

struct ShmSegmentConfig {
  std::string name;                  // "/name"
  uint64_t size_bytes = 0;           // upper bound; the layout uses what fits
  uint32_t num_clients = ZL_SHM_DEFAULT_CLIENTS;
  uint32_t request_ring_slots = ZL_SHM_DEFAULT_REQUEST_SLOTS;
  int32_t vocab_size = 0;
  int32_t max_seq_len = 0;
};

class ShmSegment {
 public:
  // Creates, maps and initializes; the header's state is RUNNING on return.
  static StatusOr<std::unique_ptr<ShmSegment>> create(const ShmSegmentConfig& config);
  ~ShmSegment();  // unmaps and unlinks (only if the name still maps to this segment)
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const shm::Layout& layout() const { return layout_; }
  // The stats region (zerolayer/stats_protocol.h): layout().stats_bytes() at stats_offset().
  void* stats_region() const { return static_cast<uint8_t*>(base_) + layout_.stats_offset(); }
  const std::string& name() const { return name_; }

  // Rewrites the header's constant fields (everything but the state,
  // heartbeat and ring words) from the server's private copy if a client
  // changed them, so that later clients can still connect. True if it did.
  bool repair_header();

 private:
  ShmSegment() = default;
  zl_shm_header written_{};  // the header as created (magic included)
  std::string name_;
  void* base_ = nullptr;
  uint64_t bytes_ = 0;
  shm::Layout layout_;
};

// Ok if the server that wrote header `h` (of segment `name`) is alive: not
// stopped, its pid exists, its heartbeat is fresh; else why not.
Status check_server_alive(const zl_shm_header& h, const std::string& name);

// Ok if a server could create segment `name` now: nothing is there, or a
// dead server's segment (start() replaces it); else the error start() would
// give, naming the live server's pid. Lets serve refuse before its model loads.
Status check_name_free(const std::string& name);

// Why `name` is not a usable shm_open name, or ok.
Status check_shm_name(const std::string& name);

}  // namespace zl
