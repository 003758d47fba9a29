// Inside the HTTP server (http_server.h): the state its connections share,
// and the interface HttpServer::Impl sees of a connection. Only
// http_server.cpp and http_session.h include this.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu_counters.h"
#include "server/access_log.h"
#include "server/completion_job.h"
#include "server/cpu_workers.h"
#include "server/http_server.h"
#include "server/openai_api.h"
#include "server/response_writer.h"
#include "server/responses_api.h"
#include "server/stats_monitor.h"

namespace zl::server {

enum class Route {
  kCompletions, kChat, kResponses, kApplyTemplate, kModels, kHealth, kMetrics, kTokenize, kDetokenize,
  kCompletionsRender, kChatRender, kAdminReload,
};

// One TCP (or TLS) connection, as the server's request handling sees it.
class SessionBase : public ResponseWriter, public std::enable_shared_from_this<SessionBase> {
 public:
  // Any thread: closes the connection on its strand.
  virtual void close_async() = 0;
};

class HttpServer::Impl {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  explicit Impl(const HttpServerConfig& c);

  Status listen();
  Status load_tls();
  void accept();
  void handle(const std::shared_ptr<SessionBase>& session, Request request);
  void attach(Engine& engine);
  void choose_output_parsers();
  void shutdown(double timeout_s);
  void begin_drain();

  HttpServerConfig config;
  // Declared before the io_context: sessions destroyed with its queued
  // handlers still unregister themselves here.
  std::mutex sessions_mutex;
  std::map<SessionBase*, std::weak_ptr<SessionBase>> sessions;
  std::atomic<int64_t> num_busy{0};  // sessions between a request and the end of its response
  std::atomic<int64_t> num_requests{0};
  std::atomic<int64_t> num_disconnects{0};
  JobRegistry registry;
  std::shared_ptr<PostGate> gate = std::make_shared<PostGate>();
  CpuWorkers workers{config.num_cpu_workers, config.max_queued_cpu_jobs, config.max_queued_body_bytes};

  // One io_context per I/O thread, each connection pinned to one of them:
  // a connection's handlers then never hop threads (no strand, no wakeup of
  // another core per operation), which halves a keep-alive round trip
  // against one io_context shared by several threads.
  std::vector<std::unique_ptr<boost::asio::io_context>> iocs;
  // Keep run() going while streams wait for engine events with no socket
  // operation pending (and after the acceptor closes at shutdown).
  std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  size_t next_ioc = 0;  // acceptor's thread only
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer accept_retry{*iocs[0]};  // acceptor's thread only, as the two below
  int64_t accept_failures = 0;
  std::chrono::steady_clock::time_point last_accept_report{};
  std::optional<boost::asio::ssl::context> tls;  // with --ssl-certfile
  std::vector<std::thread> threads;
  int32_t bound_port = 0;
  std::atomic<bool> draining{false};
  bool stopped = false;

  // Set by attach() before `engine` is published.
  std::atomic<Engine*> engine{nullptr};
  std::unique_ptr<StatsMonitor> monitor;
  std::unique_ptr<GpuCounters> gpu;  // null: CPU, or no NVML
  ApiLimits limits;
  CacheConfigInfo cache_info;  // vllm:cache_config_info's labels
  ChatSettings chat;
  std::string served_name;
  int64_t created = 0;
  // In every response id beside `created`: replicas started in the same
  // second still give different ids. Also the prefix of X-Request-Ids made here.
  uint32_t instance = std::random_device{}();
  std::atomic<uint64_t> next_request_id{1};
  ResponseStore responses;  // POST /v1/responses with store, for previous_response_id
  std::atomic<uint64_t> next_response_id{1};

 private:
  void run_on_worker(const std::shared_ptr<SessionBase>& session, Route route, Engine& engine, const std::string& body,
                     uint64_t received_ns);
  std::optional<ApiError> parse_request(Route route, const std::string& body, Engine& engine,
                                        CompletionRequest& request);
  void prepare_completion(const std::shared_ptr<SessionBase>& session, Engine& engine, const std::string& body,
                          Route route, uint64_t received_ns);
  void handle_metrics(const std::shared_ptr<SessionBase>& session);
  void handle_health(const std::shared_ptr<SessionBase>& session);
  bool authorized(Route route, const Request& request) const;
  std::optional<ApiError> admin_reload(const std::string& body, Engine& engine, std::string& out);
};

}  // namespace zl::server
