#include "server/sse.h"

#include <cstdio>

namespace zl::server {

std::string sse_response_head() {
  return "HTTP/1.1 200 OK\r\n"
         "Content-Type: text/event-stream\r\n"
         "Cache-Control: no-cache\r\n"
         "Transfer-Encoding: chunked\r\n"
         "Connection: keep-alive\r\n\r\n";
}

std::string sse_chunk(std::string_view payload) {
  constexpr std::string_view kPrefix = "data: ", kSuffix = "\n\n";
  size_t size = kPrefix.size() + payload.size() + kSuffix.size();
  char hex[24];
  int hex_len = std::snprintf(hex, sizeof(hex), "%zx\r\n", size);
  std::string out;
  out.reserve(static_cast<size_t>(hex_len) + size + 2);
  out.append(hex, static_cast<size_t>(hex_len));
  out.append(kPrefix).append(payload).append(kSuffix).append("\r\n");
  return out;
}

std::string sse_done_chunk() { return sse_chunk("[DONE]"); }

std::string_view http_last_chunk() { return "0\r\n\r\n"; }

}  // namespace zl::server
