// The shared-memory front door of the engine: creates the POSIX segment laid
// out by zerolayer/shm_protocol.h, drains its request ring on one reader
// thread, turns each record (copied out and validated first) into a
// zl::Request whose sink writes response records straight into the client's
// ring from the engine's output stage, and watches client liveness.
//
// Contracts: destroy the ShmServer before its Engine. start() fails (naming the segment) if a live server owns it; a
// stale one (pid gone or heartbeat older than 1 s) is replaced. The
// destructor stops the thread, aborts every request its clients have in
// flight, waits for their terminal events, and unlinks the segment.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "zerolayer/status.h"

namespace zl {

class Engine;

struct ShmServerConfig {
  ShmServerConfig() = default;
  ShmServerConfig(std::string name_in, uint64_t size_bytes_in) : name(std::move(name_in)), size_bytes(size_bytes_in) {}

  std::string name = "/zerolayer-8000";  // shm_open name: one leading '/', no other (serve: /zerolayer-PORT)
  uint64_t size_bytes = 64ull << 20;   // whole segment; response rings grow with it
  // Chat requests (ZL_SHM_PROMPT_CHAT) render through the model's template,
  // or this one ("chatml" or a file), as serve's --chat-template.
  std::string chat_template;
  std::string tokenizer_path;          // serve's --tokenizer, where templates may live
};

// Counters since start (any thread).
struct ShmServerStats {
  int64_t num_submitted = 0;       // accepted by the engine
  int64_t num_rejected = 0;        // answered with an ERROR record
  int64_t num_unroutable = 0;      // client slot out of range: dropped (no ring to answer on)
  int64_t num_stale_records = 0;   // from a slot that is not active or a past generation
  int64_t num_skipped_positions = 0;  // request positions claimed by a dead producer
  int64_t num_clients_reclaimed = 0;  // dead or closed clients whose slot was freed
  int64_t num_overflows = 0;       // requests aborted because their client's ring was full
  int64_t num_signature_hints = 0; // requests that carried a first-block signature
  int64_t num_header_repairs = 0;  // ticks that found the header's constant fields changed by a client
};

class ShmServer {
 public:
  static StatusOr<std::unique_ptr<ShmServer>> start(Engine& engine, const ShmServerConfig& config);
  // The error start() would give for `name` (malformed, held by a live
  // server, or not ours), checked without creating anything.
  static Status check_name(const std::string& name);
  ~ShmServer();
  ShmServer(const ShmServer&) = delete;
  ShmServer& operator=(const ShmServer&) = delete;

  const std::string& name() const;
  ShmServerStats stats() const;

  class Impl;

 private:
  explicit ShmServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl
