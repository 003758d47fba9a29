// zerolayer's HTTP/1.1 server: the OpenAI-compatible API over the engine.
//
// Asynchronous (Boost.Beast over Asio): a few I/O threads hold any number of
// keep-alive connections and SSE streams; each connection runs on its own
// strand and never waits for the engine (completion_job.h hands engine events
// across). The server listens before the model has loaded: until
// attach_engine(), /health answers 503 "loading" and the API routes 503.
//
// Routes: POST /v1/completions, POST /v1/chat/completions (400 when the model
// has no chat template), POST /apply-template, GET /v1/models, GET /health,
// GET /metrics, POST /tokenize, POST /detokenize, POST /v1/responses. With
// an API key, every route but /health and /metrics (unless
// metrics_require_key) wants "Authorization: Bearer <key>". Errors use
// OpenAI's error shape. Every response carries X-Request-Id (the client's,
// or one made here) and, for an allowed origin, CORS headers; each request
// leaves an access-log line (http_session.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zerolayer/device.h"
#include "zerolayer/status.h"

namespace zl {
class Engine;
}

namespace zl::server {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int32_t port = 8000;                     // 0: any free port (port() says which)
  int32_t num_io_threads = 2;
  // Parsing, template rendering and tokenizing run on these, off the I/O
  // threads; requests beyond the queue get 503.
  int32_t num_cpu_workers = 2;
  size_t max_queued_cpu_jobs = 4096;
  uint64_t max_queued_body_bytes = 64ull << 20;
  std::string api_key;                     // "": no authentication
  std::string served_model_name;           // "": the model spec as given
  uint64_t max_body_bytes = 16ull << 20;   // larger bodies get 413 before they are read
  double health_timeout_s = 10.0;          // an engine loop silent this long is stalled
  double idle_timeout_s = 120.0;           // idle keep-alive connections are closed
  int32_t max_stop_strings = 64;
  // Chat: the template override ("", "chatml" or a file) and a --tokenizer
  // path whose folder may hold the template; resolved at attach_engine().
  std::string chat_template;
  std::string tokenizer_path;
  // How tool calls are read from chat outputs: "auto" (from the template's
  // source), "none", or a name of server/tool_calls.h (vLLM's
  // --tool-call-parser names where it has them: hermes, llama3_json, ...).
  std::string tool_call_parser = "auto";
  // How reasoning is read from chat outputs: "auto" (on when the template
  // knows a syntax), "none", or vLLM's --reasoning-parser names of
  // server/reasoning.h (deepseek_r1, qwen3, openai_gptoss, ...).
  std::string reasoning_parser = "auto";
  // The engine's device: for cuda:N, /metrics adds that GPU's NVML counters
  // (zerolayer:gpu_*) when NVML loads; nvml_library names its file ("": the
  // default, core/gpu_counters.h).
  Device device;
  std::string nvml_library;
  // With an api_key, /metrics wants it too (default: open, for scrapers).
  bool metrics_require_key = false;
  // CORS: origins allowed to call from a browser ("*": any); empty: no CORS headers.
  std::vector<std::string> allowed_origins;
  // HTTPS when both are set (PEM files, OpenSSL through Boost.Beast).
  std::string ssl_certfile;
  std::string ssl_keyfile;
  bool access_log = true;  // one line per request on stderr (access_log.h)
};

class HttpServer {
 public:
  // Binds and listens, and starts the I/O threads.
  static StatusOr<std::unique_ptr<HttpServer>> start(const HttpServerConfig& config);
  ~HttpServer();  // shutdown(0) if not done yet
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int32_t port() const;
  const char* scheme() const;  // "http", or "https" with TLS
  // Once, after the model has loaded. The engine must outlive the server's shutdown().
  void attach_engine(Engine& engine);
  // Stops accepting; new requests get 503 ("shutting down", /health
  // "draining") while those in flight go on. idle(): none is left.
  void begin_drain();
  bool idle() const;
  // Stops accepting, aborts the requests in flight (streams get their final
  // chunk and [DONE]), waits up to timeout_s for those responses to go out,
  // then closes every connection and joins the I/O threads.
  void shutdown(double timeout_s);

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl::server
