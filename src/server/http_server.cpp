#include "server/http_server.h"

#include <poll.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "bundle/chat_prompt.h"
#include "core/log.h"
#include "server/completion_job.h"
#include "server/cpu_workers.h"
#include "server/openai_api.h"
#include "server/responses_api.h"
#include "server/sse.h"
#include "server/stats_monitor.h"
#include "tokenizer/tokenizer.h"
#include "zerolayer/engine.h"

namespace zl::server {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr auto kWriteTimeout = std::chrono::seconds(60);  // a client that stops reading is dropped
constexpr auto kBodyTimeout = std::chrono::seconds(60);
constexpr auto kDrainTimeout = std::chrono::seconds(1);   // reading the rest of a refused body before close
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(50);
constexpr auto kAcceptReportPeriod = std::chrono::seconds(5);
constexpr auto kPeerCheckPeriod = std::chrono::milliseconds(100);  // while a response is pending
constexpr size_t kMaxHeaderBytes = 64 * 1024;
// A stream whose client stops reading: once this much waits unsent behind
// the socket's own buffer, the client is dropped and its job aborted, rather
// than the rest of a long generation piling up here.
constexpr size_t kMaxUnsentStreamBytes = 4 << 20;

std::string json_error(int status, std::string message, std::string type, std::string code) {
  return error_body(ApiError{status, std::move(message), std::move(type), "", std::move(code)});
}

std::vector<std::unique_ptr<net::io_context>> make_io_contexts(int32_t n) {
  std::vector<std::unique_ptr<net::io_context>> iocs;
  for (int32_t i = 0; i < std::max(n, 1); ++i) iocs.push_back(std::make_unique<net::io_context>(1));
  return iocs;
}

enum class Route { kCompletions, kChat, kResponses, kApplyTemplate, kModels, kHealth, kMetrics, kTokenize, kDetokenize };

struct RouteEntry {
  std::string_view path;
  http::verb method;
  Route route;
};

constexpr RouteEntry kRoutes[] = {
    {"/v1/completions", http::verb::post, Route::kCompletions},
    {"/v1/chat/completions", http::verb::post, Route::kChat},
    {"/v1/responses", http::verb::post, Route::kResponses},
    {"/apply-template", http::verb::post, Route::kApplyTemplate},
    {"/v1/models", http::verb::get, Route::kModels},  // kRoutes[4]: also /v1/models/{id}
    {"/health", http::verb::get, Route::kHealth},
    {"/metrics", http::verb::get, Route::kMetrics},
    {"/tokenize", http::verb::post, Route::kTokenize},
    {"/detokenize", http::verb::post, Route::kDetokenize},
};

// Compares without an early exit, so response times do not leak the key.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

class Session;

class HttpServer::Impl {
 public:
  explicit Impl(const HttpServerConfig& c) : config(c), iocs(make_io_contexts(c.num_io_threads)), acceptor(*iocs[0]) {
    for (auto& ioc : iocs) work.push_back(net::make_work_guard(*ioc));
  }

  Status listen();
  void accept();
  void handle(const std::shared_ptr<Session>& session, http::request<http::string_body> request);
  void attach(Engine& engine);
  void shutdown(double timeout_s);

  HttpServerConfig config;
  // Declared before the io_context: sessions destroyed with its queued
  // handlers still unregister themselves here.
  std::mutex sessions_mutex;
  std::map<Session*, std::weak_ptr<Session>> sessions;
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
  std::vector<std::unique_ptr<net::io_context>> iocs;
  // Keep run() going while streams wait for engine events with no socket
  // operation pending (and after the acceptor closes at shutdown).
  std::vector<net::executor_work_guard<net::io_context::executor_type>> work;
  size_t next_ioc = 0;  // acceptor's thread only
  tcp::acceptor acceptor;
  net::steady_timer accept_retry{*iocs[0]};  // acceptor's thread only, as the two below
  int64_t accept_failures = 0;
  Clock::time_point last_accept_report{};
  std::vector<std::thread> threads;
  int32_t bound_port = 0;
  std::atomic<bool> draining{false};
  bool stopped = false;

  // Set by attach() before `engine` is published.
  std::atomic<Engine*> engine{nullptr};
  std::unique_ptr<StatsMonitor> monitor;
  std::unique_ptr<GpuCounters> gpu;  // null: CPU, or no NVML
  ApiLimits limits;
  ChatSettings chat;
  std::string served_name;
  int64_t created = 0;
  // In every response id beside `created`: replicas started in the same
  // second still give different ids.
  uint32_t instance = std::random_device{}();
  ResponseStore responses;  // POST /v1/responses with store, for previous_response_id
  std::atomic<uint64_t> next_response_id{1};

 private:
  void run_on_worker(const std::shared_ptr<Session>& session, Route route, Engine& engine, const std::string& body,
                     uint64_t received_ns);
  std::optional<ApiError> parse_request(Route route, const std::string& body, Engine& engine,
                                        CompletionRequest& request);
  void prepare_completion(const std::shared_ptr<Session>& session, Engine& engine, const std::string& body, Route route,
                          uint64_t received_ns);
  void handle_metrics(const std::shared_ptr<Session>& session);
  void handle_health(const std::shared_ptr<Session>& session);
};

// One TCP connection: reads requests one at a time, answers each through the
// ResponseWriter interface, and keeps the connection for the next. All its
// handlers run on its io_context's single thread.
class Session : public ResponseWriter, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl& server) : stream_(std::move(socket)), server_(server) {}
  ~Session() override {
    std::lock_guard<std::mutex> lock(server_.sessions_mutex);
    server_.sessions.erase(this);
  }

  void run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  void respond(int status, std::string content_type, std::string body, HttpHeaders headers) override {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " +
                      std::string(http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)))) +
                      "\r\nContent-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\n";
    for (auto& [name, value] : headers) out += name + ": " + value + "\r\n";
    out += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    out += body;
    queue(std::move(out));
    response_complete_ = true;
    maybe_next();
  }
  void begin_stream() override { queue(sse_response_head()); }
  void write_raw(std::string bytes) override {
    if (!closed_ && unsent_bytes_ + bytes.size() > kMaxUnsentStreamBytes) {
      log_warn("http: a client stopped reading its stream with ", unsent_bytes_,
               " bytes unsent; closing the connection, which aborts its request");
      return close();
    }
    queue(std::move(bytes));
  }
  void end_stream() override {
    queue(std::string(http_last_chunk()));
    response_complete_ = true;
    maybe_next();
  }
  bool is_closed() const override { return closed_; }
  void set_on_close(std::function<void()> fn) override { on_close_ = std::move(fn); }
  void post(std::function<void()> fn) override { net::post(stream_.get_executor(), std::move(fn)); }

  // Any thread: closes the connection on its strand.
  void close_async() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->close(); });
  }

 private:
  void read_header() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(server_.config.max_body_bytes);
    stream_.expires_after(std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::duration<double>(server_.config.idle_timeout_s)));
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    begin_busy();
    keep_alive_ = parser_->get().keep_alive();
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) queue("HTTP/1.1 100 Continue\r\n\r\n");
    stream_.expires_after(kBodyTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    stream_.expires_never();
    watch_peer(++watch_generation_);
    server_.handle(shared_from_this(), parser_->release());
  }

  // While a response is being produced no read is pending, so a client that
  // leaves is not noticed until a write fails, and a non-streamed job (or a
  // stream still in prefill) would run on for nothing. Until the response is
  // complete, peek at the socket every kPeerCheckPeriod: end of stream or an
  // error closes the connection, which aborts the job (on_close).
  void watch_peer(uint64_t generation) {
    peer_timer_.expires_after(kPeerCheckPeriod);
    peer_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      if (ec || self->closed_ || generation != self->watch_generation_) return;
      if (self->peer_gone()) return self->close();
      self->watch_peer(generation);
    });
  }

  // A reset, or the peer's end of stream even behind unread bytes. A client
  // that half-closes after its request counts as gone, as nginx and
  // llama-server take it: HTTP clients keep their side open for the answer.
  bool peer_gone() {
    pollfd p{stream_.socket().native_handle(), POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  // Malformed or oversized requests get their status and the connection is
  // closed (the rest of the body is unread, so the stream cannot continue).
  void on_read_error(beast::error_code ec) {
    if (ec.category() != http::make_error_code(http::error::end_of_stream).category() ||
        ec == http::error::end_of_stream || ec == http::error::partial_message) {
      return close();
    }
    begin_busy();
    keep_alive_ = false;
    if (ec == http::error::body_limit) {
      respond(413, "application/json",
              json_error(413, str_cat("the request body exceeds the limit of ", server_.config.max_body_bytes, " bytes"),
                         "invalid_request_error", "request_too_large"),
              {});
    } else if (ec == http::error::header_limit) {
      respond(431, "application/json",
              json_error(431, "the request headers are too large", "invalid_request_error", "headers_too_large"), {});
    } else {
      respond(400, "application/json",
              json_error(400, "malformed HTTP request: " + ec.message(), "invalid_request_error", "bad_http"), {});
    }
  }

  void queue(std::string bytes) {
    if (closed_) return;
    unsent_bytes_ += bytes.size();
    pending_.push_back(std::move(bytes));
    if (!writing_) start_write();
  }

  void start_write() {
    writing_ = true;
    inflight_.swap(pending_);
    buffers_.clear();
    for (const std::string& s : inflight_) buffers_.push_back(net::buffer(s));
    stream_.expires_after(kWriteTimeout);
    net::async_write(stream_, buffers_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_write(ec); });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    for (const std::string& s : inflight_) unsent_bytes_ -= s.size();
    inflight_.clear();
    if (ec) return close();
    if (!pending_.empty()) return start_write();
    maybe_next();
  }

  // After a complete response has been written: the next request, or close.
  void maybe_next() {
    if (writing_ || !response_complete_ || closed_) return;
    response_complete_ = false;
    ++watch_generation_;  // the response is out: stop watching
    peer_timer_.cancel();
    end_busy();
    if (keep_alive_ && !server_.draining.load()) return read_header();
    graceful_close();
  }

  // Half-closes, then reads (and drops) what the client still sends for a
  // moment, so its unread body does not turn our close into a reset that
  // destroys the response before the client has read it.
  void graceful_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(kDrainTimeout);
    drain_read();
  }

  void drain_read() {
    stream_.async_read_some(net::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->drain_read();
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
    peer_timer_.cancel();
    end_busy();
    std::function<void()> on_close = std::move(on_close_);
    on_close_ = nullptr;
    if (on_close) on_close();
  }

  void begin_busy() {
    if (busy_) return;
    busy_ = true;
    server_.num_busy.fetch_add(1);
  }
  void end_busy() {
    if (!busy_) return;
    busy_ = false;
    server_.num_busy.fetch_sub(1);
  }

  beast::tcp_stream stream_;
  HttpServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::vector<std::string> pending_, inflight_;
  size_t unsent_bytes_ = 0;  // in pending_ and inflight_
  std::vector<net::const_buffer> buffers_;
  std::array<char, 64 * 1024> scratch_;
  std::function<void()> on_close_;
  net::steady_timer peer_timer_{stream_.get_executor()};
  uint64_t watch_generation_ = 0;
  bool writing_ = false;
  bool response_complete_ = false;
  bool keep_alive_ = true;
  bool closed_ = false;
  bool busy_ = false;
};

Status HttpServer::Impl::listen() {
  beast::error_code ec;
  tcp::resolver resolver(*iocs[0]);
  auto results = resolver.resolve(config.host, std::to_string(config.port), ec);
  if (ec || results.empty()) return invalid_argument("--host ", config.host, ": cannot resolve: ", ec.message());
  tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return invalid_argument("cannot listen on ", config.host, ":", config.port, ": ", ec.message());
  bound_port = acceptor.local_endpoint().port();
  return ok_status();
}

void HttpServer::Impl::accept() {
  net::io_context& target = *iocs[next_ioc++ % iocs.size()];
  acceptor.async_accept(target, [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!acceptor.is_open()) return;
      // E.g. out of file descriptors: retry soon, without blocking this
      // thread's connections, and say so at most every few seconds.
      ++accept_failures;
      if (Clock::now() - last_accept_report >= kAcceptReportPeriod) {
        log_warn("http: accept failed: ", ec.message(), " (", accept_failures, " times since the last report)");
        accept_failures = 0;
        last_accept_report = Clock::now();
      }
      accept_retry.expires_after(kAcceptRetryDelay);
      accept_retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec && acceptor.is_open()) accept();
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto session = std::make_shared<Session>(std::move(socket), *this);
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      sessions[session.get()] = session;
    }
    session->run();
    accept();
  });
}

void HttpServer::Impl::attach(Engine& e) {
  const Engine::ModelInfo& info = e.model_info();
  limits.vocab_size = info.vocab_size;
  limits.max_seq_len = info.max_seq_len;
  limits.max_stop_strings = config.max_stop_strings;
  limits.max_prompt_bytes =
      int64_t(info.max_seq_len) * std::max(kMaxPromptBytesPerToken, longest_token_bytes(e.tokenizer()));
  served_name = config.served_model_name.empty() ? info.name : config.served_model_name;
  created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  StatusOr<LoadedChatTemplate> loaded =
      load_chat_template(info.path, config.tokenizer_path, info.gguf_chat_template, config.chat_template, &e.tokenizer());
  if (loaded.ok()) {
    chat.loaded = std::move(*loaded);
    log_info("http: chat template from ", chat.loaded.origin);
    if (config.tool_call_parser == "auto") {
      chat.tool_format = detect_tool_call_format(chat.loaded.chat_template->source());
    } else if (config.tool_call_parser != "none") {
      chat.tool_format = tool_call_format_named(config.tool_call_parser);
    }
    if (chat.tool_format) log_info("http: tool calls parsed as ", tool_call_format_name(*chat.tool_format));
  } else {
    chat.missing_message = "this model has no chat template, so /v1/chat/completions and /apply-template cannot be "
                           "served (use /v1/completions, or start serve with --chat-template FILE|chatml): " +
                           loaded.status().message();
    log_info("http: no chat template: ", loaded.status().message());
  }
  if (config.device.is_cuda()) {
    auto counters = GpuCounters::open(config.device.index, config.nvml_library);
    if (counters.ok()) gpu = std::move(*counters);
    else log_info("http: /metrics has no GPU counters: ", counters.status().message());
  }
  monitor = std::make_unique<StatsMonitor>(e, 0.5);
  engine.store(&e, std::memory_order_release);
}

void HttpServer::Impl::handle(const std::shared_ptr<Session>& session, http::request<http::string_body> request) {
  num_requests.fetch_add(1, std::memory_order_relaxed);
  std::string_view target = request.target();
  std::string_view path = target.substr(0, target.find('?'));
  const RouteEntry* route = nullptr;
  for (const RouteEntry& r : kRoutes)
    if (r.path == path) route = &r;
  // GET /v1/models/{id}: one model's entry.
  std::string_view model_id;
  if (!route && path.starts_with("/v1/models/")) {
    route = &kRoutes[4];
    model_id = path.substr(std::string_view("/v1/models/").size());
  }
  auto fail = [&](int status, std::string message, std::string type, std::string code, HttpHeaders headers = {}) {
    session->respond(status, "application/json", json_error(status, std::move(message), std::move(type), std::move(code)),
                     std::move(headers));
  };
  if (!route) return fail(404, "no route for " + std::string(path), "invalid_request_error", "not_found");
  if (request.method() != route->method)
    return fail(405, str_cat(request.method_string(), " is not allowed on ", path, "; use ", http::to_string(route->method)),
                "invalid_request_error", "method_not_allowed", {{"Allow", std::string(http::to_string(route->method))}});
  if (route->route != Route::kHealth && !config.api_key.empty()) {
    std::string_view auth = request[http::field::authorization];
    // The scheme is case-insensitive (RFC 9110 11.1): "bearer" is "Bearer".
    const bool bearer = auth.size() >= 7 && boost::beast::iequals(auth.substr(0, 7), "Bearer ");
    std::string_view token = bearer ? auth.substr(7) : std::string_view();
    if (!same_secret(token, config.api_key))
      return fail(401, "missing or wrong API key (send Authorization: Bearer <key>)", "invalid_request_error",
                  "invalid_api_key");
  }
  if (draining.load()) return fail(503, "the server is shutting down", "server_error", "shutting_down");
  if (route->route == Route::kHealth) return handle_health(session);
  Engine* e = engine.load(std::memory_order_acquire);
  if (!e) return fail(503, "the model is still loading", "server_error", "loading", {{"Retry-After", "1"}});
  if (route->route == Route::kModels) {
    if (!model_id.empty() && model_id != served_name && model_id != e->model_info().name)
      return fail(404, "the model '" + std::string(model_id) + "' does not exist; this server serves '" + served_name + "'",
                  "invalid_request_error", "model_not_found");
    return session->respond(200, "application/json",
                            models_body(served_name, e->model_info().name, created, limits.max_seq_len,
                                        !model_id.empty()),
                            {});
  }
  if (route->route == Route::kMetrics) return handle_metrics(session);
  // The rest parse bodies of up to max_body_bytes and tokenize: on a worker.
  // Parsing and tokenizing count as transport in (CLOCK_MONOTONIC, as steady_clock on Linux).
  const uint64_t received = uint64_t(std::chrono::nanoseconds(Clock::now().time_since_epoch()).count());
  // Queued bodies are bounded in bytes too: the I/O threads read at full speed.
  const uint64_t bytes = request.body().size();
  const bool queued = workers.try_post([this, session, route = route->route, e, received, body = std::move(request.body())] {
    run_on_worker(session, route, *e, body, received);
  }, bytes);
  if (!queued)
    fail(503, "the server is busy parsing other requests; retry", "server_error", "busy", {{"Retry-After", "1"}});
}

namespace {

// Any answer from a worker goes through the connection's strand.
void respond_json(const std::shared_ptr<Session>& session, int status, std::string body) {
  session->post([session, status, body = std::move(body)]() mutable {
    session->respond(status, "application/json", std::move(body), {});
  });
}

}  // namespace

void HttpServer::Impl::run_on_worker(const std::shared_ptr<Session>& session, Route route, Engine& e,
                                     const std::string& body, uint64_t received_ns) {
  std::string out;
  std::optional<ApiError> error;
  switch (route) {
    case Route::kCompletions:
    case Route::kChat:
    case Route::kResponses: return prepare_completion(session, e, body, route, received_ns);
    case Route::kApplyTemplate: error = apply_template_body(body, chat, out); break;
    case Route::kTokenize: error = tokenize_body(body, e.tokenizer(), limits, chat, out); break;
    case Route::kDetokenize: error = detokenize_body(body, e.tokenizer(), limits, out); break;
    default: return;  // answered on the I/O thread
  }
  if (error) return respond_json(session, error->http_status, error_body(*error));
  respond_json(session, 200, std::move(out));
}

std::optional<ApiError> HttpServer::Impl::parse_request(Route route, const std::string& body, Engine& e,
                                                        CompletionRequest& request) {
  if (route == Route::kCompletions) return parse_completion_request(body, e.tokenizer(), limits, request);
  if (route == Route::kChat) return parse_chat_request(body, e.tokenizer(), limits, chat, request);
  auto responses_request = std::make_shared<ResponsesRequest>();
  nlohmann::ordered_json chat_body;
  if (std::optional<ApiError> error = responses_to_chat(body, responses, chat_body, *responses_request)) return error;
  const std::string chat_text = chat_body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::optional<ApiError> error = parse_chat_request(chat_text, e.tokenizer(), limits, chat, request);
  request.responses = std::move(responses_request);
  return error;
}

// On a worker: parses and tokenizes, then starts the job on the connection's
// strand, unless the client has left meanwhile.
void HttpServer::Impl::prepare_completion(const std::shared_ptr<Session>& session, Engine& e, const std::string& body,
                                          Route route, uint64_t received_ns) {
  CompletionRequest request;
  if (std::optional<ApiError> error = parse_request(route, body, e, request))
    return respond_json(session, error->http_status, error_body(*error));
  if (request.structured_output.kind != StructuredOutput::Kind::kNone) {
    // Compiling a new JSON schema can take milliseconds: here, not on the I/O thread.
    if (Status s = e.compile_grammar(request.structured_output); !s.ok()) {
      const ApiError compile_error = submit_error(s);
      return respond_json(session, compile_error.http_status, error_body(compile_error));
    }
  }
  if (!request.model.empty() && request.model != served_name && request.model != e.model_info().name) {
    ApiError unknown{404, "the model '" + request.model + "' does not exist; this server serves '" + served_name + "'",
                     "invalid_request_error", "model", "model_not_found"};
    return respond_json(session, 404, error_body(unknown));
  }
  ResponseMeta meta;
  uint64_t n = next_response_id.fetch_add(1, std::memory_order_relaxed);
  const char* prefix = route == Route::kResponses ? "resp_" : route == Route::kChat ? "chatcmpl-" : "cmpl-";
  meta.id = str_cat(prefix, std::hex, created, instance, n);
  if (route == Route::kChat) meta.object = request.stream ? "chat.completion.chunk" : "chat.completion";
  if (route == Route::kResponses) meta.object = "response";
  meta.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  meta.model = served_name;
  JobContext context{&e, gate, &registry, &num_disconnects, RequestOrigin{Transport::kHttp, n, received_ns}, &responses};
  auto job = std::make_shared<CompletionJob>(std::move(context), session, std::move(request), std::move(meta));
  session->post([this, session, job] {
    if (session->is_closed()) {
      num_disconnects.fetch_add(1, std::memory_order_relaxed);  // gone while its request was parsed
    } else if (draining.load()) {  // shutdown began (and aborted every job) while it was parsed
      session->respond(503, "application/json",
                       json_error(503, "the server is shutting down", "server_error", "shutting_down"), {});
    } else {
      job->start();
    }
  });
}

void HttpServer::Impl::handle_metrics(const std::shared_ptr<Session>& session) {
  monitor->request_fresh([this, session](const EngineStats& stats) {
    HttpCounters counters{num_requests.load(), num_disconnects.load(), static_cast<int64_t>(registry.size())};
    std::optional<GpuSample> sample;
    if (gpu) {
      StatusOr<GpuSample> read = gpu->read();
      if (read.ok()) sample = std::move(*read);
      else log_warn("http: GPU counters: ", read.status().message());
    }
    std::string text = prometheus_text(stats, counters, served_name, sample ? &*sample : nullptr);
    session->post([session, text = std::move(text)]() mutable {
      session->respond(200, "text/plain; version=0.0.4; charset=utf-8", std::move(text), {});
    });
  });
}

void HttpServer::Impl::handle_health(const std::shared_ptr<Session>& session) {
  if (!engine.load(std::memory_order_acquire))
    return session->respond(503, "application/json", R"({"status":"loading"})", {{"Retry-After", "1"}});
  double waiting = monitor->seconds_waiting();
  if (waiting > config.health_timeout_s)
    return session->respond(503, "application/json",
                            str_cat(R"({"status":"stalled","engine_silent_s":)", waiting, "}"), {});
  session->respond(200, "application/json", R"({"status":"ok"})", {});
}

void HttpServer::Impl::shutdown(double timeout_s) {
  if (stopped) return;
  stopped = true;
  draining.store(true);
  net::post(acceptor.get_executor(), [this] {
    beast::error_code ec;
    acceptor.close(ec);
    accept_retry.cancel();
  });
  registry.abort_all();
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while ((registry.size() > 0 || num_busy.load() > 0) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  workers.stop();
  monitor.reset();
  gate->close();  // the engine's output stage posts nothing more
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    for (auto& [ptr, weak] : sessions)
      if (auto s = weak.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) s->close_async();
  live.clear();
  const auto close_deadline = Clock::now() + std::chrono::milliseconds(200);
  while (Clock::now() < close_deadline) {
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      if (sessions.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  work.clear();
  for (auto& ioc : iocs) ioc->stop();
  for (std::thread& t : threads) t.join();
  threads.clear();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { impl_->shutdown(0.0); }

StatusOr<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerConfig& config) {
  if (config.num_io_threads < 1 || config.num_io_threads > 256)
    return invalid_argument("http threads must be in [1, 256], got ", config.num_io_threads);
  if (config.port < 0 || config.port > 65535) return invalid_argument("--port must be in [0, 65535], got ", config.port);
  auto impl = std::make_unique<Impl>(config);
  ZL_RETURN_IF_ERROR(impl->listen());
  impl->accept();
  Impl* raw = impl.get();
  for (auto& ioc : raw->iocs) raw->threads.emplace_back([io = ioc.get()] { io->run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int32_t HttpServer::port() const { return impl_->bound_port; }

void HttpServer::attach_engine(Engine& engine) { impl_->attach(engine); }

void HttpServer::shutdown(double timeout_s) { impl_->shutdown(timeout_s); }

}  // namespace zl::server
