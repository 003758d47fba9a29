// The HTTP target: one keep-alive connection per session (Boost.Beast,
// blocking), POST /v1/completions with stream=true, the SSE body read as it
// arrives so that each chunk is timestamped when its bytes are read.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>

#include "loadgen/target.h"

namespace zl::loadgen {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr auto kIoTimeout = std::chrono::seconds(600);  // one read may wait out a long prefill queue

struct Url {
  std::string host, port, prefix;
};

StatusOr<Url> parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return invalid_argument("--base-url ", url, ": only http:// URLs are supported");
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  Url u;
  u.prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  size_t colon = authority.rfind(':');
  u.host = authority.substr(0, colon);
  u.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (u.host.empty() || u.port.empty()) return invalid_argument("--base-url ", url, ": expected http://HOST:PORT");
  return u;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// What the stream said so far, folded chunk by chunk as vLLM's client does.
struct StreamState {
  Clock::time_point sent, last_chunk;
  bool first_seen = false, done = false;
  int32_t text_chunks = 0;
  std::optional<int32_t> usage_prompt, usage_completion;
  std::optional<double> queue_ms;
  std::string error;
};

void fold_event(const std::string& payload, Clock::time_point now, StreamState& s, RequestResult* r) {
  if (payload == "[DONE]") {
    s.done = true;
    return;
  }
  json j = json::parse(payload, nullptr, false);
  if (j.is_discarded()) {
    s.error = "unparsable SSE data: " + payload.substr(0, 200);
    return;
  }
  if (j.contains("error")) {
    s.error = "server error in stream: " + j["error"].dump();
    return;
  }
  const json* timings = nullptr;
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const json& c = j["choices"][0];
    if (!s.first_seen) {
      s.first_seen = true;
      r->ttft_s = seconds(s.sent, now);
    } else {
      r->itl_s.push_back(seconds(s.last_chunk, now));
    }
    s.last_chunk = now;
    if (c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty()) ++s.text_chunks;
    if (c.contains("timings")) timings = &c["timings"];
  }
  if (j.contains("timings")) timings = &j["timings"];
  if (timings && timings->contains("queue_ms") && (*timings)["queue_ms"].is_number())
    s.queue_ms = (*timings)["queue_ms"].get<double>();
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
      s.usage_completion = u["completion_tokens"].get<int32_t>();
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      s.usage_prompt = u["prompt_tokens"].get<int32_t>();
  }
}

// Splits complete SSE events ("...\n\n") off the front of `pending`.
void consume_sse(std::string& pending, Clock::time_point now, StreamState& s, RequestResult* r) {
  size_t end;
  while (s.error.empty() && !s.done && (end = pending.find("\n\n")) != std::string::npos) {
    std::string event = pending.substr(0, end);
    pending.erase(0, end + 2);
    size_t pos = 0;
    while (pos < event.size()) {
      size_t eol = event.find('\n', pos);
      std::string line = event.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
      pos = eol == std::string::npos ? event.size() : eol + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("data:", 0) == 0) fold_event(line.substr(line[5] == ' ' ? 6 : 5), now, s, r);
    }
  }
}

class HttpSession : public Session {
 public:
  HttpSession(const Url& url, const HttpTargetConfig& config) : url_(url), config_(config) {}

  void run(const BenchRequest& request, RequestResult* result) override {
    json body{{"model", config_.model}, {"max_tokens", request.output_len}, {"temperature", 0.0},
              {"ignore_eos", true}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
    if (request.prompt_ids.empty()) body["prompt"] = request.prompt_text;
    else body["prompt"] = request.prompt_ids;
    const std::string payload = body.dump();
    const bool reused = stream_.has_value();
    beast::error_code ec;
    std::string error = exchange(payload, request, result, ec);
    if (ec && reused && !response_started_) {
      // The server closed the idle keep-alive connection (llama-server does):
      // send again on a fresh one, timing from the new send.
      stream_.reset();
      *result = RequestResult{};
      ec = {};
      error = exchange(payload, request, result, ec);
    }
    if (ec) error = "HTTP: " + ec.message();
    if (!error.empty()) {
      result->success = false;
      result->error = error;
      stream_.reset();  // the connection's state is unknown: start afresh next time
    }
  }

  // GET path; the body, or an error message in `error`.
  std::string get(const std::string& path, std::string* error) {
    beast::error_code ec;
    if (!connect(ec)) {
      *error = "cannot connect to " + config_.base_url + ": " + ec.message();
      return "";
    }
    http::request<http::empty_body> req{http::verb::get, url_.prefix + path, 11};
    set_headers(req);
    stream_->expires_after(kIoTimeout);
    http::write(*stream_, req, ec);
    http::response<http::string_body> res;
    if (!ec) http::read(*stream_, buffer_, res, ec);
    if (ec) *error = "GET " + path + ": " + ec.message();
    else if (res.result_int() != 200) *error = "GET " + path + ": HTTP " + std::to_string(res.result_int()) + " " + res.body();
    stream_.reset();
    return res.body();
  }

 private:
  template <typename Req>
  void set_headers(Req& req) {
    req.set(http::field::host, url_.host + ":" + url_.port);
    req.set(http::field::user_agent, "zerolayer-bench");
    if (!config_.api_key.empty()) req.set(http::field::authorization, "Bearer " + config_.api_key);
  }

  bool connect(beast::error_code& ec) {
    if (stream_) return true;
    tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve(url_.host, url_.port, ec);
    if (ec) return false;
    buffer_.clear();  // bytes of a previous connection
    stream_.emplace(io_);
    stream_->expires_after(kIoTimeout);
    stream_->connect(endpoints, ec);
    if (ec) {
      stream_.reset();
      return false;
    }
    stream_->socket().set_option(tcp::no_delay(true), ec);
    return true;
  }

  // Sends one streamed completion and reads it to its end; "" on success.
  std::string exchange(const std::string& payload, const BenchRequest& request, RequestResult* r,
                       beast::error_code& ec) {
    StreamState s;
    s.sent = Clock::now();  // TTFT and E2E include connecting, as vLLM's client does
    response_started_ = false;
    if (!connect(ec)) return "";
    http::request<http::string_body> req{http::verb::post, url_.prefix + config_.endpoint, 11};
    set_headers(req);
    req.set(http::field::content_type, "application/json");
    req.body() = payload;
    req.prepare_payload();
    stream_->expires_after(kIoTimeout);
    http::write(*stream_, req, ec);
    if (ec) return "";
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(*stream_, buffer_, parser, ec);
    if (ec) return "";
    response_started_ = true;
    const int status = parser.get().result_int();
    std::string pending;
    char chunk[16384];
    while (!parser.is_done() && s.error.empty() && !s.done) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof(chunk);
      stream_->expires_after(kIoTimeout);
      http::read_some(*stream_, buffer_, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) return "";
      pending.append(chunk, sizeof(chunk) - parser.get().body().size);
      if (status == 200) consume_sse(pending, Clock::now(), s, r);
    }
    Clock::time_point end = Clock::now();
    if (status != 200) return "HTTP " + std::to_string(status) + ": " + pending.substr(0, 300);
    if (!s.error.empty()) return s.error;
    if (!s.first_seen) return "the stream ended without a choice";
    // Drain what follows [DONE] so the connection can carry the next request.
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof(chunk);
      http::read_some(*stream_, buffer_, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) return "";
    }
    if (!parser.keep_alive()) stream_.reset();
    r->success = true;
    r->e2e_s = seconds(s.sent, end);
    r->output_tokens = s.usage_completion.value_or(s.text_chunks);
    r->prompt_tokens = s.usage_prompt.value_or(request.prompt_len);
    if (s.queue_ms) r->queue_s = *s.queue_ms / 1e3;
    return "";
  }

  Url url_;
  HttpTargetConfig config_;
  net::io_context io_;
  std::optional<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  bool response_started_ = false;  // the last exchange got a status line back
};

class HttpTarget : public Target {
 public:
  HttpTarget(Url url, HttpTargetConfig config) : url_(std::move(url)), config_(std::move(config)) {}
  StatusOr<std::unique_ptr<Session>> open_session() override {
    return std::unique_ptr<Session>(std::make_unique<HttpSession>(url_, config_));
  }
  int max_sessions() const override { return 4096; }

 private:
  Url url_;
  HttpTargetConfig config_;
};

}  // namespace

StatusOr<std::unique_ptr<Target>> make_http_target(HttpTargetConfig config, std::string* model_out) {
  ZL_ASSIGN_OR_RETURN(Url url, parse_url(config.base_url));
  if (config.model.empty()) {
    HttpSession probe(url, config);
    std::string error;
    std::string body = probe.get("/v1/models", &error);
    if (!error.empty()) return invalid_argument("--model not given and ", error);
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
        !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
      return invalid_argument("--model not given and GET /v1/models named no model: ", body.substr(0, 200));
    config.model = j["data"][0]["id"].get<std::string>();
  }
  *model_out = config.model;
  return std::unique_ptr<Target>(std::make_unique<HttpTarget>(std::move(url), std::move(config)));
}

}  // namespace zl::loadgen
