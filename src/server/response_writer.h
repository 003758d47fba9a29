// What a request handler needs from its connection: answer once, or open an
// SSE stream and write events to it, and learn when the peer is gone.
// Implemented by the HTTP session; kept apart so handlers (completion_job)
// carry no Boost and can be read without the socket code.
//
// Threading: every method but post() must be called on the connection's
// strand; post() may be called from any thread (the engine thread included)
// and never blocks for long (it queues a handler).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace zl::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// What a completion used, for the access log.
struct AccessUsage {
  bool ran = false;               // a completion job answered
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double first_token_s = -1;      // engine submit to first token; -1: none
};

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A complete response; the connection then reads the next request (or closes).
  virtual void respond(int status, std::string content_type, std::string body, HttpHeaders headers = {}) = 0;
  // 200 with Content-Type text/event-stream, chunked.
  virtual void begin_stream() = 0;
  // Queues already-framed bytes (sse.h) on the open stream.
  virtual void write_raw(std::string bytes) = 0;
  // Ends the stream; the connection then reads the next request.
  virtual void end_stream() = 0;
  // True once the peer is gone or a write failed; later writes are dropped.
  virtual bool is_closed() const = 0;
  // Called once, on the strand, when the connection closes before the
  // response is complete. Replacing it with {} drops the previous callback.
  virtual void set_on_close(std::function<void()> fn) = 0;
  // Runs fn on the connection's strand. Any thread.
  virtual void post(std::function<void()> fn) = 0;
  // Before the last write of a completion: what it used, for the access log.
  virtual void note_usage(const AccessUsage& usage) = 0;
};

}  // namespace zl::server
