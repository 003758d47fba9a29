// The shared-memory transport's own cost, on dummy:tiny (a nearly free
// forward pass) with the server in this process and one C client per thread:
//   token_transport_us   engine thread's sink write -> client's read, per
//                        streamed token (sink_ns vs read_ns in each record)
//   request_rtt_us       zl_client_submit -> terminal record of a 1-token
//                        request (includes one engine step)
// at 1 and 64 concurrent clients, beside a bare loopback TCP ping-pong
// (1-byte round trip) measured in the same run. One JSON line per figure:
//   {"bench":"shm","clients":1,"metric":"token_transport_us","n":..,"p50":..,"p99":..}
// Clients spin --spin-us (default 50; raise it on a quiet machine) before
// sleeping, so that a token's cost is the cache-line hand-over, not a futex
// wake-up; with more spinning clients than cores the scheduler dominates.
// Usage: shm_bench [--requests N] [--tokens M] [--clients 1,64] [--spin-us U] [--engine-threads T]
#include <CLI/CLI.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "transport/shm_server.h"
#include "zerolayer/client.h"
#include "zerolayer/engine.h"

namespace {

struct Samples {
  std::mutex mutex;
  std::vector<double> token_us, request_us;
};

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void print(const char* bench, int clients, const char* metric, std::vector<double> v) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(q * double(v.size())))]; };
  std::printf("{\"bench\":\"%s\",\"clients\":%d,\"metric\":\"%s\",\"n\":%zu,\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f}\n",
              bench, clients, metric, v.size(), at(0.5), at(0.99), v.back());
  std::fflush(stdout);
}

// One client thread: `requests` streamed requests of `tokens` tokens, then
// `requests` 1-token requests timed end to end.
void client_thread(const std::string& name, int index, int requests, int tokens, uint32_t spin_us,
                   Samples* samples) {
  zl_client* client = nullptr;
  if (zl_client_connect(name.c_str(), &client) != ZL_OK) {
    std::fprintf(stderr, "connect: %s\n", zl_client_last_error(nullptr));
    return;
  }
  zl_client_set_spin_us(client, spin_us);
  std::vector<double> token_us, request_us;
  std::vector<int32_t> prompt = {1 + index % 100, 2, 3};
  zl_request request;
  zl_request_init(&request);
  request.prompt_ids = prompt.data();
  request.num_prompt_ids = uint32_t(prompt.size());
  request.sampling.temperature = 0.0f;
  request.ignore_eos = 1;
  zl_event event;
  for (int phase = 0; phase < 2; ++phase) {
    request.max_new_tokens = phase == 0 ? tokens : 1;
    for (int r = 0; r < requests; ++r) {
      double start = now_us();
      uint64_t id = 0;
      if (zl_client_submit(client, &request, &id) != ZL_OK) break;
      while (zl_client_next_event(client, &event, 10000) == ZL_OK) {
        if (phase == 0 && event.record.kind == ZL_SHM_RESPONSE_TOKEN)
          token_us.push_back(double(event.read_ns - event.record.sink_ns) / 1000.0);
        if (zl_event_is_terminal(&event)) break;
      }
      if (phase == 1) request_us.push_back(now_us() - start);
    }
  }
  zl_client_close(client);
  std::lock_guard<std::mutex> lock(samples->mutex);
  samples->token_us.insert(samples->token_us.end(), token_us.begin(), token_us.end());
  samples->request_us.insert(samples->request_us.end(), request_us.begin(), request_us.end());
}

// Bare loopback TCP: a 1-byte ping-pong with TCP_NODELAY, per round trip.
std::vector<double> tcp_ping_pong(int rounds) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, 1) != 0) return {};
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread echo([listener] {
    int fd = accept(listener, nullptr, nullptr);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char c;
    while (read(fd, &c, 1) == 1 && write(fd, &c, 1) == 1) {
    }
    close(fd);
  });
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::vector<double> us;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    char c = 'x';
    for (int r = 0; r < rounds; ++r) {
      double start = now_us();
      if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1) break;
      us.push_back(now_us() - start);
    }
  }
  close(fd);
  echo.join();
  close(listener);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Shared-memory transport latency (dummy:tiny), as JSON lines"};
  int requests = 20, tokens = 64, engine_threads = 1;
  uint32_t spin_us = 50;
  std::vector<int> client_counts = {1, 64};
  app.add_option("--requests", requests, "requests per client per phase")->check(CLI::Range(1, 100000));
  app.add_option("--tokens", tokens, "tokens per streamed request")->check(CLI::Range(1, 900));
  app.add_option("--spin-us", spin_us, "client spin before the futex sleep");
  app.add_option("--engine-threads", engine_threads, "engine compute threads");
  app.add_option("--clients", client_counts, "concurrent clients, one run each")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  zl::EngineConfig config;
  config.model = "dummy:tiny";
  config.kv_cache_bytes = 64 << 20;
  config.num_threads = engine_threads;
  auto engine = zl::Engine::create(config);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().message().c_str());
    return 1;
  }
  std::string name = "/zl_shm_bench_" + std::to_string(getpid());
  auto server = zl::ShmServer::start(**engine, {name, 64 << 20});
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().message().c_str());
    return 1;
  }
  for (int clients : client_counts) {
    Samples samples;
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) threads.emplace_back(client_thread, name, c, requests, tokens, spin_us, &samples);
    for (auto& thread : threads) thread.join();
    print("shm", clients, "token_transport_us", samples.token_us);
    print("shm", clients, "request_rtt_us", samples.request_us);
  }
  print("tcp_loopback", 1, "ping_pong_rtt_us", tcp_ping_pong(20000));
  return 0;
}
