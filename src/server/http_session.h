// One HTTP/1.1 connection of the server (http_server.h), over plain TCP or
// TLS (Stream: beast::tcp_stream or beast::ssl_stream of one): reads
// requests one at a time, answers each through the ResponseWriter interface,
// and keeps the connection for the next. All its handlers run on its
// io_context's single thread. Each request leaves one access-log line.
#pragma once

#include <poll.h>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/log.h"
#include "server/http_server_impl.h"
#include "server/sse.h"

namespace zl::server {

constexpr auto kWriteTimeout = std::chrono::seconds(60);  // a client that stops reading is dropped
constexpr auto kBodyTimeout = std::chrono::seconds(60);
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kDrainTimeout = std::chrono::seconds(1);   // reading the rest of a refused body before close
constexpr auto kPeerCheckPeriod = std::chrono::milliseconds(100);  // while a response is pending
constexpr size_t kMaxHeaderBytes = 64 * 1024;
// A stream whose client stops reading: once this much waits unsent behind
// the socket's own buffer, the client is dropped and its job aborted, rather
// than the rest of a long generation piling up here.
constexpr size_t kMaxUnsentStreamBytes = 4 << 20;

std::string json_error(int status, std::string message, std::string type, std::string code);

using TcpStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

template <typename Stream>
class Session final : public SessionBase {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  template <typename... TlsContext>
  Session(boost::asio::ip::tcp::socket socket, HttpServer::Impl& server, TlsContext&... tls)
      : stream_(std::move(socket), tls...), server_(server) {
    boost::system::error_code ec;
    auto endpoint = lowest().socket().remote_endpoint(ec);
    if (!ec) peer_ = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }
  ~Session() override {
    std::lock_guard<std::mutex> lock(server_.sessions_mutex);
    server_.sessions.erase(this);
  }

  void run() {
    boost::asio::dispatch(stream_.get_executor(), [self = self()] {
      if constexpr (kTls) {
        self->lowest().expires_after(kHandshakeTimeout);
        self->stream_.async_handshake(boost::asio::ssl::stream_base::server, [self](boost::beast::error_code ec) {
          if (ec) return self->close();  // not TLS, or a failed handshake: nothing to answer on
          self->read_header();
        });
      } else {
        self->read_header();
      }
    });
  }

  void respond(int status, std::string content_type, std::string body, HttpHeaders headers) override {
    record_.status = status;
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " +
                      std::string(boost::beast::http::obsolete_reason(
                          boost::beast::http::int_to_status(static_cast<unsigned>(status)))) +
                      "\r\nContent-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\n";
    for (auto& [name, value] : headers) out += name + ": " + value + "\r\n";
    out += common_headers();
    out += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    out += body;
    queue(std::move(out));
    response_complete_ = true;
    maybe_next();
  }
  void begin_stream() override {
    record_.status = 200;
    queue(sse_response_head(common_headers()));
  }
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
  void post(std::function<void()> fn) override { boost::asio::post(stream_.get_executor(), std::move(fn)); }
  void note_usage(const AccessUsage& usage) override { record_.usage = usage; }

  void close_async() override {
    boost::asio::post(stream_.get_executor(), [self = self()] { self->close(); });
  }

 private:
  std::shared_ptr<Session> self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  TcpStream& lowest() { return boost::beast::get_lowest_layer(stream_); }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(server_.config.max_body_bytes);
    lowest().expires_after(std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::duration<double>(server_.config.idle_timeout_s)));
    boost::beast::http::async_read_header(stream_, buffer_, *parser_,
                                          [self = self()](boost::beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(boost::beast::error_code ec) {
    if (ec) return on_read_error(ec);
    begin_busy();
    begin_record(parser_->get());
    keep_alive_ = parser_->get().keep_alive();
    if (boost::beast::iequals(parser_->get()[boost::beast::http::field::expect], "100-continue"))
      queue("HTTP/1.1 100 Continue\r\n\r\n");
    lowest().expires_after(kBodyTimeout);
    boost::beast::http::async_read(stream_, buffer_, *parser_,
                                   [self = self()](boost::beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(boost::beast::error_code ec) {
    if (ec) return on_read_error(ec);
    lowest().expires_never();
    watch_peer(++watch_generation_);
    server_.handle(shared_from_this(), parser_->release());
  }

  // What the access log and the response headers need of this request.
  void begin_record(const HttpServer::Impl::Request& request) {
    namespace http = boost::beast::http;
    started_ = std::chrono::steady_clock::now();
    const std::string_view target = request.target();
    record_ = AccessRecord{};
    record_.method = std::string(request.method_string());
    record_.path = std::string(target.substr(0, target.find('?')));
    record_.peer = peer_;
    record_.request_id = valid_request_id(request["X-Request-Id"]);
    if (record_.request_id.empty()) record_.request_id = made_request_id();
    parse_traceparent(request["traceparent"], record_.trace_id, record_.parent_id);
    allow_origin_ = allowed_origin(server_.config.allowed_origins, request[http::field::origin]);
  }

  std::string made_request_id() const {
    return str_cat(std::hex, server_.instance, "-", server_.next_request_id.fetch_add(1));
  }

  // On every response: the request's id, and CORS for an allowed origin.
  std::string common_headers() const {
    std::string out = "X-Request-Id: " + record_.request_id + "\r\n";
    if (!allow_origin_.empty()) {
      out += "Access-Control-Allow-Origin: " + allow_origin_ + "\r\n";
      if (allow_origin_ != "*") out += "Vary: Origin\r\n";
    }
    return out;
  }

  void log_access() {
    if (!server_.config.access_log || record_.method.empty()) return;
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    log_info("access: ", access_log_line(record_, total_s));
    record_.method.clear();
  }

  // While a response is being produced no read is pending, so a client that
  // leaves is not noticed until a write fails, and a non-streamed job (or a
  // stream still in prefill) would run on for nothing. Until the response is
  // complete, peek at the socket every kPeerCheckPeriod: end of stream or an
  // error closes the connection, which aborts the job (on_close).
  void watch_peer(uint64_t generation) {
    peer_timer_.expires_after(kPeerCheckPeriod);
    peer_timer_.async_wait([self = self(), generation](boost::beast::error_code ec) {
      if (ec || self->closed_ || generation != self->watch_generation_) return;
      if (self->peer_gone()) return self->close();
      self->watch_peer(generation);
    });
  }

  // A reset, or the peer's end of stream even behind unread bytes. A client
  // that half-closes after its request counts as gone, as nginx and
  // llama-server take it: HTTP clients keep their side open for the answer.
  bool peer_gone() {
    pollfd p{lowest().socket().native_handle(), POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

  // Malformed or oversized requests get their status and the connection is
  // closed (the rest of the body is unread, so the stream cannot continue).
  void on_read_error(boost::beast::error_code ec) {
    namespace http = boost::beast::http;
    if (ec.category() != http::make_error_code(http::error::end_of_stream).category() ||
        ec == http::error::end_of_stream || ec == http::error::partial_message) {
      return close();
    }
    begin_busy();
    keep_alive_ = false;
    if (record_.method.empty()) {  // the header did not parse: log the answer as "- -"
      record_ = AccessRecord{};
      record_.method = record_.path = "-";
      record_.peer = peer_;
      record_.request_id = made_request_id();
      started_ = std::chrono::steady_clock::now();
    }
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
    for (const std::string& s : inflight_) buffers_.push_back(boost::asio::buffer(s));
    lowest().expires_after(kWriteTimeout);
    boost::asio::async_write(stream_, buffers_,
                             [self = self()](boost::beast::error_code ec, size_t) { self->on_write(ec); });
  }

  void on_write(boost::beast::error_code ec) {
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
    log_access();
    end_busy();
    if (keep_alive_ && !server_.draining.load()) return read_header();
    graceful_close();
  }

  // Half-closes, then reads (and drops) what the client still sends for a
  // moment, so its unread body does not turn our close into a reset that
  // destroys the response before the client has read it. TLS first says
  // close_notify.
  void graceful_close() {
    lowest().expires_after(kDrainTimeout);
    if constexpr (kTls) {
      stream_.async_shutdown([self = self()](boost::beast::error_code) { self->close(); });
    } else {
      boost::beast::error_code ec;
      lowest().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
      drain_read();
    }
  }

  void drain_read() {
    stream_.async_read_some(boost::asio::buffer(scratch_), [self = self()](boost::beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->drain_read();
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    boost::beast::error_code ec;
    lowest().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    lowest().close();
    peer_timer_.cancel();
    if (busy_) log_access();  // the client left before its response was out
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

  Stream stream_;
  HttpServer::Impl& server_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::vector<std::string> pending_, inflight_;
  size_t unsent_bytes_ = 0;  // in pending_ and inflight_
  std::vector<boost::asio::const_buffer> buffers_;
  std::array<char, 64 * 1024> scratch_;
  std::function<void()> on_close_;
  boost::asio::steady_timer peer_timer_{stream_.get_executor()};
  uint64_t watch_generation_ = 0;
  std::string peer_;
  AccessRecord record_;
  std::string allow_origin_;
  std::chrono::steady_clock::time_point started_;
  bool writing_ = false;
  bool response_complete_ = false;
  bool keep_alive_ = true;
  bool closed_ = false;
  bool busy_ = false;
};

}  // namespace zl::server
