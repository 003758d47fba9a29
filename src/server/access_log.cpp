#include "server/access_log.h"

#include <algorithm>
#include <cstdio>

#include "zerolayer/status.h"

namespace zl::server {
namespace {

bool lower_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool all_zeros(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", seconds * 1e3);
  return text;
}

}  // namespace

std::string valid_request_id(std::string_view header) {
  constexpr size_t kMaxRequestIdBytes = 128;
  if (header.empty() || header.size() > kMaxRequestIdBytes) return "";
  // Visible ASCII only: the id goes into a log line and a response header.
  const bool visible = std::all_of(header.begin(), header.end(), [](char c) { return c > ' ' && c < 127; });
  return visible ? std::string(header) : "";
}

bool parse_traceparent(std::string_view h, std::string& trace_id, std::string& parent_id) {
  // version(2) - trace id(32) - parent id(16) - flags(2); version ff is invalid.
  if (h.size() != 55 || h[2] != '-' || h[35] != '-' || h[52] != '-') return false;
  const std::string_view version = h.substr(0, 2), trace = h.substr(3, 32), parent = h.substr(36, 16),
                         flags = h.substr(53, 2);
  if (!lower_hex(version) || version == "ff" || !lower_hex(trace) || !lower_hex(parent) || !lower_hex(flags))
    return false;
  if (all_zeros(trace) || all_zeros(parent)) return false;
  trace_id = trace;
  parent_id = parent;
  return true;
}

std::string access_log_line(const AccessRecord& r, double total_s) {
  std::string line = str_cat(r.method, " ", r.path, " ", r.status);
  if (r.usage.ran) {
    line += str_cat(" in=", r.usage.prompt_tokens, " out=", r.usage.completion_tokens);
    if (r.usage.first_token_s >= 0) line += " ttft_ms=" + milliseconds(r.usage.first_token_s);
  }
  line += " total_ms=" + milliseconds(total_s) + " id=" + r.request_id;
  if (!r.trace_id.empty()) line += " trace=" + r.trace_id + " parent=" + r.parent_id;
  return line + " peer=" + r.peer;
}

std::string allowed_origin(const std::vector<std::string>& allowed, std::string_view origin) {
  if (origin.empty()) return "";
  for (const std::string& a : allowed) {
    if (a == "*") return "*";
    if (a == origin) return std::string(origin);
  }
  return "";
}

HttpHeaders preflight_headers(std::string_view requested_headers) {
  return {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
          {"Access-Control-Allow-Headers", requested_headers.empty() ? "Authorization, Content-Type, X-Request-Id"
                                                                     : std::string(requested_headers)},
          {"Access-Control-Max-Age", "600"}};
}

}  // namespace zl::server
