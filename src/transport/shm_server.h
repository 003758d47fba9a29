// The shared-memory front door of the engine: creates the POSIX segment laid
// out by zerolayer/shm_protocol.h, drains its request ring on one reader
// thread, turns each record (copied out and validated first) into a
// zl::Request whose sink writes response records straight into the client's
// ring on the engine thread, and watches client liveness.
//
// Contracts: start() fails (naming the segment) if a live server owns it; a
// stale one (pid gone or heartbeat older than 1 s) is replaced. The
// destructor stops the thread, aborts every request its clients have in
// flight, waits for their terminal events, and unlinks the segment.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace zl {

class Engine;

struct ShmServerConfig {
  std::string name = "/zerolayer";     // shm_open name: one leading '/', no other
  uint64_t size_bytes = 64ull << 20;   // whole segment; response rings grow with it
};

class ShmServer {
 public:
  static StatusOr<std::unique_ptr<ShmServer>> start(Engine& engine, const ShmServerConfig& config);
  ~ShmServer();
  ShmServer(const ShmServer&) = delete;
  ShmServer& operator=(const ShmServer&) = delete;

  const std::string& name() const;

  class Impl;

 private:
  explicit ShmServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl
