#include "server/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bundle/chat_prompt.h"
#include "core/log.h"
#include "server/http_server_impl.h"
#include "server/http_session.h"
#include "tokenizer/tokenizer.h"
#include "zerolayer/engine.h"

namespace zl::server {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(50);
constexpr auto kAcceptReportPeriod = std::chrono::seconds(5);

std::vector<std::unique_ptr<net::io_context>> make_io_contexts(int32_t n) {
  std::vector<std::unique_ptr<net::io_context>> iocs;
  for (int32_t i = 0; i < std::max(n, 1); ++i) iocs.push_back(std::make_unique<net::io_context>(1));
  return iocs;
}

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
    {"/v1/completions/render", http::verb::post, Route::kCompletionsRender},
    {"/v1/chat/completions/render", http::verb::post, Route::kChatRender},
    {"/admin/reload", http::verb::post, Route::kAdminReload},
};

// Compares without an early exit, so response times do not leak the key.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

std::string json_error(int status, std::string message, std::string type, std::string code) {
  return error_body(ApiError{status, std::move(message), std::move(type), "", std::move(code)});
}

HttpServer::Impl::Impl(const HttpServerConfig& c)
    : config(c), iocs(make_io_contexts(c.num_io_threads)), acceptor(*iocs[0]) {
  for (auto& ioc : iocs) work.push_back(net::make_work_guard(*ioc));
}

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

Status HttpServer::Impl::load_tls() {
  if (config.ssl_certfile.empty() && config.ssl_keyfile.empty()) return ok_status();
  if (config.ssl_certfile.empty() || config.ssl_keyfile.empty())
    return invalid_argument("TLS needs both --ssl-certfile and --ssl-keyfile");
  std::error_code exists;
  for (const std::string* file : {&config.ssl_certfile, &config.ssl_keyfile})
    if (!std::filesystem::is_regular_file(*file, exists))
      return invalid_argument(file == &config.ssl_certfile ? "--ssl-certfile" : "--ssl-keyfile", ": '", *file,
                              "' is not a file");
  tls.emplace(net::ssl::context::tls_server);
  tls->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                   net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
  beast::error_code ec;
  tls->use_certificate_chain_file(config.ssl_certfile, ec);
  if (ec) return invalid_argument("--ssl-certfile ", config.ssl_certfile, ": ", ec.message());
  tls->use_private_key_file(config.ssl_keyfile, net::ssl::context::pem, ec);
  if (ec) return invalid_argument("--ssl-keyfile ", config.ssl_keyfile, ": ", ec.message());
  if (SSL_CTX_check_private_key(tls->native_handle()) != 1)
    return invalid_argument("--ssl-keyfile ", config.ssl_keyfile, " does not match --ssl-certfile ", config.ssl_certfile);
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
    std::shared_ptr<SessionBase> session;
    if (tls) {
      auto s = std::make_shared<Session<TlsStream>>(std::move(socket), *this, *tls);
      s->run();
      session = std::move(s);
    } else {
      auto s = std::make_shared<Session<TcpStream>>(std::move(socket), *this);
      s->run();
      session = std::move(s);
    }
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      sessions[session.get()] = session;
    }
    accept();
  });
}

// The tool-call and reasoning syntaxes of chat outputs: named by the
// config, or (auto) read from the chat template's source.
void HttpServer::Impl::choose_output_parsers() {
  const std::string_view source = chat.loaded.chat_template->source();
  if (config.tool_call_parser == "auto") {
    chat.tool_format = detect_tool_call_format(source);
  } else if (config.tool_call_parser != "none") {
    chat.tool_format = tool_call_format_named(config.tool_call_parser);
  }
  if (chat.tool_format) log_info("http: tool calls parsed as ", tool_call_format_name(*chat.tool_format));
  if (config.reasoning_parser == "auto") {
    chat.reasoning_format = detect_reasoning_format(source);
  } else if (config.reasoning_parser != "none") {
    chat.reasoning_format = reasoning_format_named(config.reasoning_parser);
  }
  if (chat.reasoning_format)
    log_info("http: reasoning (", reasoning_format_description(*chat.reasoning_format), ") parsed out of chat outputs");
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
    choose_output_parsers();
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
  cache_info = CacheConfigInfo{info.kv_block_size, kv_cache_dtype_name(info.kv_cache_dtype), info.kv_num_blocks,
                               cache_policy_name(info.cache_policy)};
  monitor = std::make_unique<StatsMonitor>(e, 0.5);
  engine.store(&e, std::memory_order_release);
}

void HttpServer::Impl::handle(const std::shared_ptr<SessionBase>& session, Request request) {
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
  // A CORS preflight: answered without the key, which browsers do not send on it.
  if (request.method() == http::verb::options && !config.allowed_origins.empty()) {
    if (allowed_origin(config.allowed_origins, request[http::field::origin]).empty())
      return fail(403, "CORS: this origin is not in --allowed-origins", "invalid_request_error", "origin_not_allowed");
    return session->respond(204, "text/plain", "", preflight_headers(request[http::field::access_control_request_headers]));
  }
  if (request.method() != route->method)
    return fail(405, str_cat(request.method_string(), " is not allowed on ", path, "; use ", http::to_string(route->method)),
                "invalid_request_error", "method_not_allowed", {{"Allow", std::string(http::to_string(route->method))}});
  if (!authorized(route->route, request))
    return fail(401, "missing or wrong API key (send Authorization: Bearer <key>)", "invalid_request_error",
                "invalid_api_key");
  if (route->route == Route::kHealth) return handle_health(session);
  if (draining.load()) return fail(503, "the server is shutting down", "server_error", "shutting_down");
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

bool HttpServer::Impl::authorized(Route route, const Request& request) const {
  if (config.api_key.empty() || route == Route::kHealth) return true;
  // Prometheus scrapers usually send no key: /metrics is open unless asked.
  if (route == Route::kMetrics && !config.metrics_require_key) return true;
  std::string_view auth = request[http::field::authorization];
  // The scheme is case-insensitive (RFC 9110 11.1): "bearer" is "Bearer".
  const bool bearer = auth.size() >= 7 && boost::beast::iequals(auth.substr(0, 7), "Bearer ");
  std::string_view token = bearer ? auth.substr(7) : std::string_view();
  return same_secret(token, config.api_key);
}

namespace {

// Any answer from a worker goes through the connection's strand.
void respond_json(const std::shared_ptr<SessionBase>& session, int status, std::string body) {
  session->post([session, status, body = std::move(body)]() mutable {
    session->respond(status, "application/json", std::move(body), {});
  });
}

}  // namespace

void HttpServer::Impl::run_on_worker(const std::shared_ptr<SessionBase>& session, Route route, Engine& e,
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
    case Route::kAdminReload: error = admin_reload(body, e, out); break;
    case Route::kCompletionsRender:
    case Route::kChatRender: {
      const bool chat = route == Route::kChatRender;
      CompletionRequest request;
      error = parse_request(chat ? Route::kChat : Route::kCompletions, body, e, request);
      if (!error) out = render_body(request, chat);
      break;
    }
    default: return;  // answered on the I/O thread
  }
  if (error) return respond_json(session, error->http_status, error_body(*error));
  respond_json(session, 200, std::move(out));
}

// POST /admin/reload {"model": SPEC?}: Engine::reload on this worker thread
// (seconds); requests arriving meanwhile wait in the engine, none is refused.
std::optional<ApiError> HttpServer::Impl::admin_reload(const std::string& body, Engine& e, std::string& out) {
  // Loading a path named by a client is for its operator only.
  if (config.api_key.empty()) {
    ApiError e403{403, "POST /admin/reload is off: start the server with --api-key", "invalid_request_error", "",
                  "admin_disabled"};
    return e403;
  }
  const nlohmann::json j = nlohmann::json::parse(body.empty() ? std::string("{}") : body, nullptr, false);
  if (!j.is_object()) return bad_request("", "the body must be a JSON object");
  std::string model;
  if (const auto it = j.find("model"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>().empty())
      return bad_request("model", "model must be a non-empty string: a path, a Hub id or dummy:NAME");
    model = it->get<std::string>();
  }
  const auto start = Clock::now();
  if (Status s = e.reload(model); !s.ok()) {
    ApiError error = submit_error(s);
    if (s.code() == StatusCode::kInvalidArgument) error.param = "model";
    return error;
  }
  out = nlohmann::json{{"status", "reloaded"}, {"model", model.empty() ? e.model_info().name : model},
                       {"seconds", std::chrono::duration<double>(Clock::now() - start).count()}}
            .dump();
  return std::nullopt;
}

std::optional<ApiError> HttpServer::Impl::parse_request(Route route, const std::string& body, Engine& e,
                                                        CompletionRequest& request) {
  if (route == Route::kCompletions) return parse_completion_request(body, e.tokenizer(), limits, request);
  if (route == Route::kChat) return parse_chat_request(body, e.tokenizer(), limits, chat, request);
  auto responses_request = std::make_shared<ResponsesRequest>();
  nlohmann::ordered_json chat_body;
  if (std::optional<ApiError> error = responses_to_chat(body, responses, chat_body, *responses_request)) return error;
  std::optional<ApiError> error = parse_chat_object(chat_body, e.tokenizer(), limits, chat, request);
  request.stream = responses_request->stream;  // as response events (CompletionJob)
  request.responses = std::move(responses_request);
  return error;
}

// On a worker: parses and tokenizes, then starts the job on the connection's
// strand, unless the client has left meanwhile.
void HttpServer::Impl::prepare_completion(const std::shared_ptr<SessionBase>& session, Engine& e, const std::string& body,
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

void HttpServer::Impl::handle_metrics(const std::shared_ptr<SessionBase>& session) {
  monitor->request_fresh([this, session](const EngineStats& stats) {
    HttpCounters counters{num_requests.load(), num_disconnects.load(), static_cast<int64_t>(registry.size())};
    std::optional<GpuSample> sample;
    if (gpu) {
      StatusOr<GpuSample> read = gpu->read();
      if (read.ok()) sample = std::move(*read);
      else log_warn("http: GPU counters: ", read.status().message());
    }
    std::string text = prometheus_text(stats, counters, served_name, cache_info, sample ? &*sample : nullptr);
    session->post([session, text = std::move(text)]() mutable {
      session->respond(200, "text/plain; version=0.0.4; charset=utf-8", std::move(text), {});
    });
  });
}

void HttpServer::Impl::handle_health(const std::shared_ptr<SessionBase>& session) {
  // Draining: a load balancer's readiness check takes this replica out.
  if (draining.load()) return session->respond(503, "application/json", R"({"status":"draining"})", {});
  if (!engine.load(std::memory_order_acquire))
    return session->respond(503, "application/json", R"({"status":"loading"})", {{"Retry-After", "1"}});
  double waiting = monitor->seconds_waiting();
  if (waiting > config.health_timeout_s)
    return session->respond(503, "application/json",
                            str_cat(R"({"status":"stalled","engine_silent_s":)", waiting, "}"), {});
  session->respond(200, "application/json", R"({"status":"ok"})", {});
}

void HttpServer::Impl::begin_drain() {
  if (draining.exchange(true)) return;
  net::post(acceptor.get_executor(), [this] {
    beast::error_code ec;
    acceptor.close(ec);
    accept_retry.cancel();
  });
}

void HttpServer::Impl::shutdown(double timeout_s) {
  if (stopped) return;
  stopped = true;
  begin_drain();
  registry.abort_all();
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while ((registry.size() > 0 || num_busy.load() > 0) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  workers.stop();
  monitor.reset();
  gate->close();  // the engine's output stage posts nothing more
  std::vector<std::shared_ptr<SessionBase>> live;
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
  ZL_RETURN_IF_ERROR(impl->load_tls());
  ZL_RETURN_IF_ERROR(impl->listen());
  impl->accept();
  Impl* raw = impl.get();
  for (auto& ioc : raw->iocs) raw->threads.emplace_back([io = ioc.get()] { io->run(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int32_t HttpServer::port() const { return impl_->bound_port; }

const char* HttpServer::scheme() const { return impl_->tls ? "https" : "http"; }

void HttpServer::begin_drain() { impl_->begin_drain(); }

bool HttpServer::idle() const { return impl_->registry.size() == 0 && impl_->num_busy.load() == 0; }

void HttpServer::attach_engine(Engine& engine) { impl_->attach(engine); }

void HttpServer::shutdown(double timeout_s) { impl_->shutdown(timeout_s); }

}  // namespace zl::server
