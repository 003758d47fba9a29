// The Hub's HTTP client: Boost.Beast over a plain TCP stream or an OpenSSL
// stream, the same request code for both (a template over the stream).
#include "model/hf_http.h"

#include <openssl/ssl.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

namespace zl {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

constexpr int kMaxRedirects = 10;
constexpr size_t kReadChunkBytes = size_t{1} << 16;

struct Url {
  bool tls = false;
  std::string host, port, target;  // target: "/path?query"
  std::string origin() const {
    return (tls ? "https://" : "http://") + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  }
};

StatusOr<Url> parse_url(const std::string& url) {
  Url u;
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    u.tls = true;
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else {
    return invalid_argument("URL ", url, ": only http:// and https:// are supported");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos) return invalid_argument("URL ", url, ": user info is not supported");
  std::string_view port_part;  // ":PORT" or ""
  if (authority.starts_with('[')) {  // [IPv6]
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid_argument("URL ", url, ": unclosed '['");
    u.host = authority.substr(1, close - 1);
    port_part = authority.substr(close + 1);
  } else {
    size_t colon = authority.find(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port_part = authority.substr(colon);
  }
  if (!port_part.empty() && port_part[0] != ':') return invalid_argument("URL ", url, ": expected ':' after the host");
  u.port = port_part.empty() ? (u.tls ? "443" : "80") : std::string(port_part.substr(1));
  bool port_ok = !u.port.empty() && u.port.size() <= 5 &&
                 std::all_of(u.port.begin(), u.port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (u.host.empty() || !port_ok) return invalid_argument("URL ", url, ": expected http[s]://HOST[:PORT]/PATH");
  for (char c : u.target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return invalid_argument("URL ", url, ": has spaces or control characters");
  return u;
}

// Where a Location header leads from `from`: an absolute URL, or a path on the same origin.
StatusOr<Url> redirect_target(const Url& from, const std::string& location) {
  if (location.starts_with("http://") || location.starts_with("https://")) return parse_url(location);
  if (location.starts_with("//")) return parse_url((from.tls ? "https:" : "http:") + location);
  if (!location.starts_with("/")) return data_loss("a redirect to '", location.substr(0, 200), "', which is not a URL");
  Url to = from;
  to.target = location;
  for (char c : to.target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return data_loss("a redirect with control characters");
  return to;
}

std::string host_header(const Url& u) {
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  bool default_port = u.port == (u.tls ? "443" : "80");
  return default_port ? host : host + ":" + u.port;
}

std::string describe(const Url& u) { return u.origin() + u.target.substr(0, 200); }

// One exchange on a connected stream: writes the request, reads the header,
// then the body into `sink` (2xx) or `out.body`.
template <typename Stream>
Status exchange(Stream& stream, const Url& url, const HttpRequest& request, bool send_token, const HttpBodySink& sink,
                uint64_t max_body_bytes, HttpResponse& out) {
  auto& lowest = beast::get_lowest_layer(stream);
  http::request<http::empty_body> req{request.method == "HEAD" ? http::verb::head : http::verb::get, url.target, 11};
  req.set(http::field::host, host_header(url));
  req.set(http::field::user_agent, "zerolayer/0.1");
  req.set(http::field::accept_encoding, "identity");
  if (send_token && !request.bearer_token.empty()) req.set(http::field::authorization, "Bearer " + request.bearer_token);
  if (!request.range.empty()) req.set(http::field::range, request.range);
  req.set(http::field::connection, "close");
  beast::error_code ec;
  lowest.expires_after(request.io_timeout);
  http::write(stream, req, ec);
  if (ec) return unavailable("sending the request to ", describe(url), ": ", ec.message());

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  if (request.method == "HEAD") parser.skip(true);  // a HEAD response has a Content-Length but no body
  lowest.expires_after(request.io_timeout);
  http::read_header(stream, buffer, parser, ec);
  if (ec) return unavailable("reading the response of ", describe(url), ": ", ec.message());
  out.status = parser.get().result_int();
  out.url = url.origin() + url.target;
  out.headers.clear();
  out.body.clear();
  for (const auto& field : parser.get()) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    out.headers[name] = std::string(field.value());
  }
  const bool success = out.status >= 200 && out.status < 300;
  const bool streamed = success && sink.write;
  if (streamed && sink.start) ZL_RETURN_IF_ERROR(sink.start(out));
  std::array<char, kReadChunkBytes> chunk;
  uint64_t num_read = 0;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    lowest.expires_after(request.io_timeout);
    http::read(stream, buffer, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    size_t n = chunk.size() - parser.get().body().size;
    num_read += n;
    std::string_view piece(chunk.data(), n);
    if (streamed) {
      if (n > 0) ZL_RETURN_IF_ERROR(sink.write(piece));
    } else if (out.body.size() + n <= max_body_bytes) {
      out.body.append(piece);
    } else if (success) {
      return data_loss(describe(url), ": the response is larger than ", max_body_bytes, " bytes");
    } else {
      break;  // an error page: its start is enough
    }
    if (ec) return unavailable(describe(url), ": the response broke off after ", num_read, " bytes: ", ec.message());
  }
  return ok_status();
}

Status exchange_plain(net::io_context& io, const tcp::resolver::results_type& endpoints, const Url& url,
                      const HttpRequest& request, bool send_token, const HttpBodySink& sink, uint64_t max_body_bytes,
                      HttpResponse& out) {
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.expires_after(request.io_timeout);
  stream.connect(endpoints, ec);
  if (ec) return unavailable("cannot connect to ", url.origin(), ": ", ec.message());
  Status status = exchange(stream, url, request, send_token, sink, max_body_bytes, out);
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return status;
}

Status exchange_tls(net::io_context& io, const tcp::resolver::results_type& endpoints, const Url& url,
                    const HttpRequest& request, bool send_token, const HttpBodySink& sink, uint64_t max_body_bytes,
                    HttpResponse& out) {
  ssl::context context(ssl::context::tls_client);
  context.set_default_verify_paths();  // honours SSL_CERT_FILE / SSL_CERT_DIR
  context.set_verify_mode(ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(io, context);
  if (!SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str()))
    return unavailable("TLS: cannot set the server name ", url.host);
  stream.set_verify_callback(ssl::host_name_verification(url.host));
  beast::error_code ec;
  beast::get_lowest_layer(stream).expires_after(request.io_timeout);
  beast::get_lowest_layer(stream).connect(endpoints, ec);
  if (ec) return unavailable("cannot connect to ", url.origin(), ": ", ec.message());
  beast::get_lowest_layer(stream).expires_after(request.io_timeout);
  stream.handshake(ssl::stream_base::client, ec);
  if (ec) return unavailable("TLS handshake with ", url.host, ": ", ec.message());
  Status status = exchange(stream, url, request, send_token, sink, max_body_bytes, out);
  beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ec);  // no TLS close_notify wait
  return status;
}

bool is_redirect(int status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

StatusOr<HttpResponse> http_request(const HttpRequest& request, const HttpBodySink& sink, uint64_t max_body_bytes) {
  if (request.method != "GET" && request.method != "HEAD") return invalid_argument("HTTP method ", request.method);
  ZL_ASSIGN_OR_RETURN(Url url, parse_url(request.url));
  const std::string token_origin = url.origin();
  net::io_context io;
  HttpResponse response;
  for (int hop = 0;; ++hop) {
    tcp::resolver resolver(io);
    beast::error_code ec;
    auto endpoints = resolver.resolve(url.host, url.port, ec);
    if (ec) return unavailable("cannot resolve ", url.host, ": ", ec.message());
    const bool send_token = url.origin() == token_origin;
    Status status = url.tls ? exchange_tls(io, endpoints, url, request, send_token, sink, max_body_bytes, response)
                            : exchange_plain(io, endpoints, url, request, send_token, sink, max_body_bytes, response);
    ZL_RETURN_IF_ERROR(status);
    if (!request.follow_redirects || !is_redirect(response.status)) return response;
    if (hop == kMaxRedirects) return unavailable(request.url, ": more than ", kMaxRedirects, " redirects");
    std::string location = response.header("location");
    if (location.empty()) return data_loss(describe(url), ": HTTP ", response.status, " without a Location");
    ZL_ASSIGN_OR_RETURN(url, redirect_target(url, location));
  }
}

std::string url_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace zl
