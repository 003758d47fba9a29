// A small blocking HTTP/1.1 client for the Hugging Face Hub (model/hf_hub.h):
// GET and HEAD over http:// or https:// (TLS through OpenSSL, with the
// system's CA certificates, SNI and a host-name check), one connection per
// request. Everything the server sends is untrusted: a body read into memory is
// capped, a streamed one goes to the caller's sink piece by piece, and callers
// validate the headers they use. A bearer token is sent only to the host of
// the first URL, never to a host a redirect leads to (the Hub redirects file
// downloads to a CDN).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "zerolayer/status.h"

namespace zl {

struct HttpRequest {
  std::string method = "GET";  // "GET" or "HEAD"
  std::string url;             // http://HOST[:PORT]/PATH or https://...
  std::string bearer_token;    // "" for none
  std::string range;           // a Range header value ("bytes=N-"), or ""
  bool follow_redirects = false;
  std::chrono::seconds io_timeout{60};  // for connecting and for each read or write
};

struct HttpResponse {
  int status = 0;
  std::string url;                             // the URL that answered (after redirects)
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;  // in memory when no sink took it; for a status other than 2xx, at most the cap
  // The header's value, or "" when absent (`name` in lower case).
  std::string header(const std::string& name) const;
};

// Where a 2xx body goes as it arrives: `start` sees the response's status and
// headers before any of the body (it may refuse them), then `write` takes each
// piece. An error from either stops the transfer and is returned as is.
struct HttpBodySink {
  std::function<Status(const HttpResponse& head)> start;  // optional
  std::function<Status(std::string_view bytes)> write;
};

// Sends the request and reads the response. With a sink (`write` set) a 2xx
// body streams into it; otherwise the body is kept in memory, at most max_body_bytes (a
// longer 2xx body is an error, a longer error body is cut). Failing to
// connect, a timeout or a body cut short is kUnavailable; any status code is
// a response, not an error.
StatusOr<HttpResponse> http_request(const HttpRequest& request, const HttpBodySink& sink = {},
                                    uint64_t max_body_bytes = uint64_t{1} << 20);

// "%2F" for '/', and so on: everything but unreserved characters (RFC 3986),
// and '/' too when keep_slash.
std::string url_encode(std::string_view text, bool keep_slash);

}  // namespace zl
