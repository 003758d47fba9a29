// http_bench: what the HTTP front end costs, beside a bare loopback TCP
// ping-pong measured in the same run (same machine, same moment).
//
// On dummy:tiny (a forward pass of a few hundred µs at most) it measures, at
// each concurrency (clients on their own keep-alive connection):
//   tcp_pingpong     64-byte round trips over loopback TCP (the floor)
//   http_roundtrip   GET /health round trips: HTTP parsing + routing + reply
//   http_stream      POST /v1/completions, stream=true, max_tokens tokens:
//                    per request (send -> [DONE]) and per streamed token
//                    (gap between consecutive SSE events; includes the
//                    engine step, which the transport cannot beat)
// One JSON line per (transport, clients): p50/p99 in µs.
//   build/http_bench --clients 1,64 --requests 50 --max-tokens 32
#include <CLI/CLI.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"
#include "zerolayer/engine.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

struct Samples {
  std::mutex mutex;
  std::vector<double> values;
  void add(const std::vector<double>& v) {
    std::lock_guard<std::mutex> lock(mutex);
    values.insert(values.end(), v.begin(), v.end());
  }
  double quantile(double q) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    return values[std::min(values.size() - 1, static_cast<size_t>(q * static_cast<double>(values.size())))];
  }
};

void print_line(const char* transport, const char* unit, int clients, Samples& s) {
  std::printf("{\"bench\":\"http\",\"transport\":\"%s\",\"per\":\"%s\",\"clients\":%d,\"n\":%zu,"
              "\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
              transport, unit, clients, s.values.size(), s.quantile(0.5), s.quantile(0.99));
  std::fflush(stdout);
}

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

void send_all(int fd, const std::string& s) {
  size_t sent = 0;
  while (sent < s.size()) {
    ssize_t n = send(fd, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) std::exit(1);
    sent += static_cast<size_t>(n);
  }
}

// A thread-per-connection echo server on an ephemeral port.
struct EchoServer {
  int listen_fd = -1;
  int port = 0;
  std::vector<std::thread> threads;
  std::atomic<bool> stop{false};

  EchoServer() {
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listen_fd, 1024);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  void accept_n(int n) {
    for (int i = 0; i < n; ++i) {
      int fd = accept(listen_fd, nullptr, nullptr);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      threads.emplace_back([fd] {
        char buf[4096];
        ssize_t n;
        while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) send(fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
        close(fd);
      });
    }
  }
  ~EchoServer() {
    for (auto& t : threads) t.join();
    close(listen_fd);
  }
};

void bench_tcp(int clients, int rounds) {
  EchoServer echo;
  Samples rtt;
  std::thread acceptor([&] { echo.accept_n(clients); });
  std::vector<std::thread> workers;
  for (int c = 0; c < clients; ++c) {
    workers.emplace_back([&] {
      int fd = connect_to(echo.port);
      std::string msg(64, 'x');
      char buf[64];
      std::vector<double> local;
      for (int r = 0; r < rounds; ++r) {
        auto t0 = Clock::now();
        send_all(fd, msg);
        size_t got = 0;
        while (got < msg.size()) {
          ssize_t n = recv(fd, buf, sizeof(buf), 0);
          if (n <= 0) std::exit(1);
          got += static_cast<size_t>(n);
        }
        local.push_back(us_since(t0, Clock::now()));
      }
      close(fd);
      rtt.add(local);
    });
  }
  for (auto& w : workers) w.join();
  acceptor.join();
  print_line("tcp_pingpong", "roundtrip", clients, rtt);
}

// Reads one HTTP response from fd into `pending` bookkeeping: for a streamed
// response, returns each SSE event's arrival time; stops at the response end.
std::vector<Clock::time_point> read_response(int fd, bool streamed) {
  std::vector<Clock::time_point> events;
  std::string data;
  char buf[65536];
  size_t scanned = 0;
  while (true) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) std::exit(1);
    auto now = Clock::now();
    data.append(buf, static_cast<size_t>(n));
    if (!streamed) {
      size_t head = data.find("\r\n\r\n");
      if (head == std::string::npos) continue;
      size_t cl = data.find("Content-Length: ");
      size_t length = std::stoul(data.substr(cl + 16));
      if (data.size() >= head + 4 + length) return {now};
      continue;
    }
    size_t at;
    while ((at = data.find("data: ", scanned)) != std::string::npos) {
      events.push_back(now);
      scanned = at + 6;
    }
    if (data.size() >= 5 && data.compare(data.size() - 5, 5, "0\r\n\r\n") == 0) return events;
  }
}

void bench_http(int port, int clients, int requests, int max_tokens, bool streamed) {
  Samples per_request, per_token;
  std::vector<std::thread> workers;
  for (int c = 0; c < clients; ++c) {
    workers.emplace_back([&, c] {
      int fd = connect_to(port);
      std::string body = "{\"prompt\":\"client " + std::to_string(c) + "\",\"max_tokens\":" +
                         std::to_string(max_tokens) + ",\"stream\":true,\"ignore_eos\":true,\"temperature\":0}";
      std::string request = streamed ? "POST /v1/completions HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
                                       "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body
                                     : std::string("GET /health HTTP/1.1\r\nHost: b\r\n\r\n");
      std::vector<double> local_request, local_token;
      for (int r = 0; r < requests; ++r) {
        auto t0 = Clock::now();
        send_all(fd, request);
        std::vector<Clock::time_point> events = read_response(fd, streamed);
        local_request.push_back(us_since(t0, events.back()));
        // Token gaps: between consecutive events, [DONE] excluded.
        for (size_t i = 1; i + 1 < events.size(); ++i) local_token.push_back(us_since(events[i - 1], events[i]));
      }
      close(fd);
      per_request.add(local_request);
      per_token.add(local_token);
    });
  }
  for (auto& w : workers) w.join();
  if (!streamed) return print_line("http_roundtrip", "roundtrip", clients, per_request);
  print_line("http_stream", "request", clients, per_request);
  print_line("http_stream", "token", clients, per_token);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"HTTP transport cost beside bare loopback TCP"};
  std::vector<int> clients_list{1, 64};
  int requests = 50, max_tokens = 32, threads = 0, io_threads = 2;
  std::string model = "dummy:tiny";
  app.add_option("--clients", clients_list, "Concurrency levels")->delimiter(',');
  app.add_option("--requests", requests, "Requests per client");
  app.add_option("--max-tokens", max_tokens, "Tokens per streamed request");
  app.add_option("--threads", threads, "Engine compute threads (0: one per core)");
  app.add_option("--http-threads", io_threads, "HTTP I/O threads");
  app.add_option("--model", model, "Model");
  CLI11_PARSE(app, argc, argv);

  zl::EngineConfig config;
  config.model = model;
  config.num_threads = threads;
  config.max_num_seqs = 128;
  config.kv_cache_bytes = 64 << 20;
  auto engine = zl::Engine::create(config);
  if (!engine.ok()) {
    std::fprintf(stderr, "error: %s\n", engine.status().message().c_str());
    return 1;
  }
  zl::server::HttpServerConfig http_config;
  http_config.port = 0;
  http_config.num_io_threads = io_threads;
  auto server = zl::server::HttpServer::start(http_config);
  if (!server.ok()) {
    std::fprintf(stderr, "error: %s\n", server.status().message().c_str());
    return 1;
  }
  (*server)->attach_engine(**engine);
  for (int clients : clients_list) {
    bench_tcp(clients, requests * 10);
    bench_http((*server)->port(), clients, requests * 10, max_tokens, false);
    bench_http((*server)->port(), clients, requests, max_tokens, true);
  }
  (*server)->shutdown(1.0);
  return 0;
}
