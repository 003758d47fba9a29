// What the HTTP server says of each request it answers, and the headers
// that travel with it: the access-log line, X-Request-Id (the client's, if
// well formed, else one made here; echoed on the response), W3C traceparent
// (its trace and parent ids carried into the log line), and CORS
// (--allowed-origins). Pure functions of strings: no socket code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/response_writer.h"

namespace zl::server {

// One request, from its header to the end of its response.
struct AccessRecord {
  std::string method;
  std::string path;         // without the query
  std::string peer;         // "address:port"
  std::string request_id;
  std::string trace_id;     // 32 hex digits, "" without a valid traceparent
  std::string parent_id;    // 16 hex digits
  int status = 0;           // 0: the client left before any response
  AccessUsage usage;
};

// X-Request-Id as sent when it is 1..128 visible ASCII characters; "" otherwise
// (the caller then makes one).
std::string valid_request_id(std::string_view header);

// A W3C traceparent "00-<trace id>-<parent id>-<flags>" (lowercase hex, ids not
// all zero): its ids, or false.
bool parse_traceparent(std::string_view header, std::string& trace_id, std::string& parent_id);

// One line: `METHOD PATH STATUS in=N out=N ttft_ms=X total_ms=X id=ID
// [trace=T parent=P] peer=ADDR` (tokens and TTFT only where a completion ran).
std::string access_log_line(const AccessRecord& record, double total_s);

// CORS: the Access-Control-Allow-Origin value for a request from `origin`,
// or "" when the origin is not allowed (or none was sent).
std::string allowed_origin(const std::vector<std::string>& allowed, std::string_view origin);

// The answer to a preflight OPTIONS from an allowed origin: 204's headers
// beside Access-Control-Allow-Origin (which every response carries).
HttpHeaders preflight_headers(std::string_view requested_headers);

}  // namespace zl::server
