#include "server/sse.h"

#include <cstdio>

namespace zl::server {

std::string sse_response_head(std::string_view extra_headers) {
  std::string head =
      "HTTP/1.1 200 OK\r\n"
      "Content-Type: text/event-stream\r\n"
      "Cache-Control: no-cache\r\n"
      "Transfer-Encoding: chunked\r\n";
  head += extra_headers;
  return head + "Connection: keep-alive\r\n\r\n";
}

namespace {

// "<hex size>\r\n" + prefix + body + suffix + "\r\n".
std::string framed(std::string_view prefix, std::string_view body, std::string_view suffix) {
  size_t size = prefix.size() + body.size() + suffix.size();
  char hex[24];
  int hex_len = std::snprintf(hex, sizeof(hex), "%zx\r\n", size);
  std::string out;
  out.reserve(static_cast<size_t>(hex_len) + size + 2);
  out.append(hex, static_cast<size_t>(hex_len));
  out.append(prefix).append(body).append(suffix).append("\r\n");
  return out;
}

}  // namespace

std::string sse_chunk(std::string_view payload) { return framed("data: ", payload, "\n\n"); }

// No events, no chunk: a zero-length one would end the response.
std::string http_chunk(std::string_view events) { return events.empty() ? std::string() : framed("", events, ""); }

std::string sse_done_chunk() { return sse_chunk("[DONE]"); }

std::string_view http_last_chunk() { return "0\r\n\r\n"; }

}  // namespace zl::server
