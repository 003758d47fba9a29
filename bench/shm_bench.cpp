// The shared-memory transport's own cost, on dummy:tiny (a nearly free
// forward pass) with the server in this process and one C client per thread:
//   token_transport_us   sink write (sink_ns, on the thread that publishes
//                        the request's events) -> the client's read
//                        (read_ns), per streamed token
//   token_transport_{spun,woken}_us   the same, split by how the client's
//                        wait ended: read while spinning (or already there),
//                        or after sleeping on the futex
//   token_interval_us    sink_ns of consecutive tokens of one request: the
//                        engine's step interval, which decides whether a
//                        client can afford to spin through it
//   token_read_gap_us    read_ns of consecutive tokens (what http_bench's
//                        per-token figure measures for SSE)
//   stream_request_us    zl_client_submit -> terminal record, --tokens tokens
//   request_rtt_us       zl_client_submit -> terminal record of a 1-token
//                        request (includes one engine step)
//   waits                how the client's waits ended (zl_client_wait_stats):
//                        read while spinning, or after a futex wake-up
// at each --clients count, beside a bare loopback TCP ping-pong (1-byte round
// trips, as many concurrent pairs as clients) measured in the same run.
// Every line carries the run's conditions: spin settings, engine threads,
// the machine's CPUs and its load average when the run started.
// A client reads a token within a cache-line hand-over only while it is
// spinning on a core of its own; asleep, a futex wake-up costs ~5 us on an
// idle core and a scheduler's time slice on a busy one.
// Usage: shm_bench [--requests N] [--tokens M] [--clients 1,64] [--spin-us U]
//                  [--adaptive-spin-us A] [--engine-threads T]
#include <CLI/CLI.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "transport/shm_server.h"
#include "zerolayer/client.h"
#include "zerolayer/engine.h"

namespace {

struct Options {
  int requests = 20;
  int tokens = 64;
  uint32_t spin_us = 20;            // as the C client's default
  uint32_t adaptive_spin_us = 250;  // as the C client's default
  int engine_threads = 1;
  std::vector<int> client_counts = {1, 64};
};

struct Samples {
  std::mutex mutex;
  std::vector<double> token_us, interval_us, read_gap_us, stream_us, request_us;
  std::vector<double> spun_us, woken_us;  // token_us split by how the wait ended
  zl_client_wait_stats waits{};

  void add(const Samples& s) {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto [to, from] : {std::pair{&token_us, &s.token_us}, {&interval_us, &s.interval_us},
                            {&read_gap_us, &s.read_gap_us}, {&stream_us, &s.stream_us},
                            {&request_us, &s.request_us}, {&spun_us, &s.spun_us}, {&woken_us, &s.woken_us}})
      to->insert(to->end(), from->begin(), from->end());
    waits.num_events += s.waits.num_events;
    waits.num_woken_events += s.waits.num_woken_events;
    waits.num_sleeps += s.waits.num_sleeps;
    waits.num_preempted_spins += s.waits.num_preempted_spins;
  }
};

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The run's conditions, appended to every JSON line.
std::string conditions(const Options& o) {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  char buf[256];
  std::snprintf(buf, sizeof(buf), "\"spin_us\":%u,\"adaptive_spin_us\":%u,\"engine_threads\":%d,\"cpus\":%u,\"loadavg\":%.2f",
                o.spin_us, o.adaptive_spin_us, o.engine_threads, std::thread::hardware_concurrency(), load);
  return buf;
}

void print(const char* bench, int clients, const char* metric, std::vector<double> v, const std::string& cond) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(q * double(v.size())))]; };
  std::printf("{\"bench\":\"%s\",\"clients\":%d,\"metric\":\"%s\",\"n\":%zu,\"p50\":%.2f,\"p99\":%.2f,\"max\":%.2f,%s}\n",
              bench, clients, metric, v.size(), at(0.5), at(0.99), v.back(), cond.c_str());
  std::fflush(stdout);
}

// Reads one request's events up to its terminal record; with `per_token`,
// records each token's transport time (also by whether the client read it
// spinning or after a futex wake-up) and intervals.
void read_request(zl_client* client, bool per_token, Samples* out) {
  zl_event event;
  uint64_t last_sink = 0, last_read = 0;
  zl_client_wait_stats before, after;
  zl_client_get_wait_stats(client, &before);
  while (zl_client_next_event(client, &event, 10000) == ZL_OK) {
    zl_client_get_wait_stats(client, &after);
    if (per_token && event.record.kind == ZL_SHM_RESPONSE_TOKEN) {
      double us = double(event.read_ns - event.record.sink_ns) / 1000.0;
      out->token_us.push_back(us);
      (after.num_woken_events > before.num_woken_events ? out->woken_us : out->spun_us).push_back(us);
      if (last_sink != 0) {
        out->interval_us.push_back(double(event.record.sink_ns - last_sink) / 1000.0);
        out->read_gap_us.push_back(double(event.read_ns - last_read) / 1000.0);
      }
      last_sink = event.record.sink_ns;
      last_read = event.read_ns;
    }
    if (zl_event_is_terminal(&event)) return;
    before = after;
  }
  std::fprintf(stderr, "next_event: %s\n", zl_client_last_error(client));
}

// One client thread: `requests` streamed requests of `tokens` tokens, then
// `requests` 1-token requests timed end to end.
void client_thread(const std::string& name, int index, const Options& o, Samples* samples) {
  zl_client* client = nullptr;
  if (zl_client_connect(name.c_str(), &client) != ZL_OK) {
    std::fprintf(stderr, "connect: %s\n", zl_client_last_error(nullptr));
    return;
  }
  zl_client_set_spin_us(client, o.spin_us);
  zl_client_set_adaptive_spin_us(client, o.adaptive_spin_us);
  Samples mine;
  std::vector<int32_t> prompt = {1 + index % 100, 2, 3};
  zl_request request;
  zl_request_init(&request);
  request.prompt_ids = prompt.data();
  request.num_prompt_ids = uint32_t(prompt.size());
  request.sampling.temperature = 0.0f;
  request.ignore_eos = 1;
  for (int phase = 0; phase < 2; ++phase) {
    request.max_new_tokens = phase == 0 ? o.tokens : 1;
    for (int r = 0; r < o.requests; ++r) {
      double start = now_us();
      uint64_t id = 0;
      if (zl_client_submit(client, &request, &id) != ZL_OK) break;
      read_request(client, phase == 0, &mine);
      (phase == 0 ? mine.stream_us : mine.request_us).push_back(now_us() - start);
    }
  }
  zl_client_get_wait_stats(client, &mine.waits);
  zl_client_close(client);
  samples->add(mine);
}

// Bare loopback TCP: `pairs` concurrent 1-byte ping-pongs with TCP_NODELAY,
// each on its own connection and echo thread; one sample per round trip.
std::vector<double> tcp_ping_pong(int pairs, int rounds) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, pairs) != 0) return {};
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<std::thread> threads;
  for (int p = 0; p < pairs; ++p) {
    threads.emplace_back([listener] {
      int fd = accept(listener, nullptr, nullptr);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      char c;
      while (read(fd, &c, 1) == 1 && write(fd, &c, 1) == 1) {
      }
      close(fd);
    });
  }
  std::mutex mutex;
  std::vector<double> all;
  for (int p = 0; p < pairs; ++p) {
    threads.emplace_back([&] {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::vector<double> us;
      if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
        char c = 'x';
        for (int r = 0; r < rounds; ++r) {
          double start = now_us();
          if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1) break;
          us.push_back(now_us() - start);
        }
      }
      close(fd);
      std::lock_guard<std::mutex> lock(mutex);
      all.insert(all.end(), us.begin(), us.end());
    });
  }
  for (auto& thread : threads) thread.join();
  close(listener);
  return all;
}

void run_clients(const std::string& name, int clients, const Options& o) {
  const std::string cond = conditions(o);
  Samples samples;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) threads.emplace_back(client_thread, name, c, std::cref(o), &samples);
  for (auto& thread : threads) thread.join();
  print("shm", clients, "token_transport_us", samples.token_us, cond);
  print("shm", clients, "token_transport_spun_us", samples.spun_us, cond);
  print("shm", clients, "token_transport_woken_us", samples.woken_us, cond);
  print("shm", clients, "token_interval_us", samples.interval_us, cond);
  print("shm", clients, "token_read_gap_us", samples.read_gap_us, cond);
  print("shm", clients, "stream_request_us", samples.stream_us, cond);
  print("shm", clients, "request_rtt_us", samples.request_us, cond);
  const zl_client_wait_stats& w = samples.waits;
  std::printf("{\"bench\":\"shm\",\"clients\":%d,\"metric\":\"waits\",\"events\":%llu,\"woken_share\":%.3f,"
              "\"sleeps\":%llu,\"preempted_spins\":%llu,%s}\n",
              clients, (unsigned long long)w.num_events,
              w.num_events ? double(w.num_woken_events) / double(w.num_events) : 0.0,
              (unsigned long long)w.num_sleeps, (unsigned long long)w.num_preempted_spins, cond.c_str());
  print("tcp_loopback", clients, "ping_pong_rtt_us", tcp_ping_pong(clients, std::max(o.requests * o.tokens, 1000)),
        conditions(o));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Shared-memory transport latency (dummy:tiny), as JSON lines"};
  Options o;
  app.add_option("--requests", o.requests, "requests per client per phase")->check(CLI::Range(1, 100000));
  app.add_option("--tokens", o.tokens, "tokens per streamed request")->check(CLI::Range(2, 900));
  app.add_option("--spin-us", o.spin_us, "client's fixed spin before the futex sleep (zl_client_set_spin_us)");
  app.add_option("--adaptive-spin-us", o.adaptive_spin_us,
                 "client's adaptive spin bound, 0: off (zl_client_set_adaptive_spin_us)");
  app.add_option("--engine-threads", o.engine_threads, "engine compute threads (1: the engine thread alone)")
      ->check(CLI::Range(1, 256));
  app.add_option("--clients", o.client_counts, "concurrent clients, one run each")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  zl::EngineConfig config;
  config.model = "dummy:tiny";
  config.kv_cache_bytes = 64 << 20;
  config.num_threads = o.engine_threads;
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
  for (int clients : o.client_counts) run_clients(name, clients, o);
  return 0;
}
