// Where a benchmark sends its requests. A Target opens Sessions; each
// Session belongs to one worker thread and runs one request at a time,
// blocking until its stream ends, filling a RequestResult with the timings
// the client saw. Two targets: an OpenAI-compatible HTTP server
// (/v1/completions, streamed) and zerolayer's shared-memory transport.
#pragma once

#include <memory>
#include <string>

#include "loadgen/bench_stats.h"
#include "loadgen/workload.h"
#include "zerolayer/status.h"

namespace zl::loadgen {

class Session {
 public:
  virtual ~Session() = default;
  // Sends `request` (greedy, ignore_eos, max_tokens = output_len) and waits for its end.
  virtual void run(const BenchRequest& request, RequestResult* result) = 0;
};

class Target {
 public:
  virtual ~Target() = default;
  virtual StatusOr<std::unique_ptr<Session>> open_session() = 0;
  // The most sessions that may be open at once (shared memory has a fixed number of client slots).
  virtual int max_sessions() const = 0;
};

struct HttpTargetConfig {
  std::string base_url;   // http://HOST:PORT[/PREFIX]
  std::string api_key;    // sent as "Authorization: Bearer KEY" when set
  std::string model;      // "" asks GET /v1/models for the first one
  std::string endpoint = "/v1/completions";
};
// Checks the URL and resolves the model name (the server must be up).
StatusOr<std::unique_ptr<Target>> make_http_target(HttpTargetConfig config, std::string* model_out);

// `max_clients`: how many client slots the benchmark may claim at most.
StatusOr<std::unique_ptr<Target>> make_shm_target(const std::string& shm_name, int max_clients);

}  // namespace zl::loadgen
