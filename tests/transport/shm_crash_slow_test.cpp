// Process deaths over shared memory, with real processes: a client killed
// with SIGKILL mid-stream has its requests aborted and KV freed within ~1 s;
// a server killed with SIGKILL makes a waiting client fail within 1 s; the
// segment it leaves behind is replaced by the next server.
//
// Children are forked while this process has no other threads (before any
// Engine exists), so they may allocate and start threads safely.
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "shm_test_util.h"

namespace zl::test {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One byte through a pipe, or false after timeout_ms.
bool wait_byte(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  char c;
  return poll(&p, 1, timeout_ms) == 1 && read(fd, &c, 1) == 1;
}

void signal_byte(int fd) {
  char c = 'x';
  (void)!write(fd, &c, 1);
}

// Kills and reaps a forked child if the test ends before it does (a failed
// ASSERT), so that no child outlives the test holding ctest's output open.
struct ChildGuard {
  ~ChildGuard() { kill_now(); }
  void kill_now() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = 0;
  }
  pid_t pid;
};

TEST(ShmCrash, KilledClientHasItsKvFreedWithinASecond) {
  std::string name = unique_shm_name("client_kill");
  int go[2], ready[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the client: submit long requests, keep reading, get killed
    if (!wait_byte(go[0], 30000)) _exit(2);
    zl_client* client = nullptr;
    if (zl_client_connect(name.c_str(), &client) != ZL_OK) _exit(3);
    std::vector<int32_t> prompt = {4, 5, 6, 7};
    for (int i = 0; i < 100; ++i) {  // dummy:tiny is fast: enough work to outlast the kill
      zl_request request = greedy_request(prompt, 1000);
      if (zl_client_submit(client, &request, nullptr) != ZL_OK) _exit(4);
    }
    zl_event event;
    if (zl_client_next_event(client, &event, 10000) != ZL_OK) _exit(5);
    signal_byte(ready[1]);
    while (zl_client_next_event(client, &event, 10000) == ZL_OK) {
    }
    _exit(6);
  }
  ChildGuard guard{child};
  auto engine = make_tiny_engine();
  auto server = ShmServer::start(*engine, {name, 16 << 20});
  ASSERT_TRUE(server.ok()) << server.status().message();
  signal_byte(go[1]);
  ASSERT_TRUE(wait_byte(ready[0], 30000)) << "the client never streamed";
  EngineStats before = engine->stats();
  ASSERT_GT(before.num_running, 0) << "requests ended before the kill (" << before.num_finished << " finished, "
                                   << (*server)->stats().num_overflows << " overflowed, "
                                   << (*server)->stats().num_rejected << " rejected)";
  guard.kill_now();
  auto killed = Clock::now();
  EngineStats stats;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stats = engine->stats();
  } while ((stats.num_running > 0 || stats.kv.num_used_blocks > 0) && seconds_since(killed) < 5);
  double freed_s = seconds_since(killed);
  EXPECT_EQ(stats.num_running, 0);
  EXPECT_EQ(stats.kv.num_used_blocks, 0);
  EXPECT_LT(freed_s, 1.0) << "KV freed " << freed_s << " s after the client died";
  // The slot is free again for the next client.
  while ((*server)->stats().num_clients_reclaimed == 0 && seconds_since(killed) < 1.0)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ((*server)->stats().num_clients_reclaimed, 1);
  zl_client* next = nullptr;
  ASSERT_EQ(zl_client_connect(name.c_str(), &next), ZL_OK);
  zl_client_close(next);
}

TEST(ShmCrash, KilledServerFailsWaitingClientWithinASecondAndIsReplaced) {
  std::string name = unique_shm_name("server_kill");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the server, to be killed
    auto engine = make_tiny_engine();
    auto server = ShmServer::start(*engine, {name, 16 << 20});
    if (!server.ok()) _exit(2);
    signal_byte(ready[1]);
    for (;;) pause();
  }
  ChildGuard guard{child};
  ASSERT_TRUE(wait_byte(ready[0], 30000)) << "the server child never started";
  zl_client* client = nullptr;
  ASSERT_EQ(zl_client_connect(name.c_str(), &client), ZL_OK) << zl_client_last_error(nullptr);
  std::vector<int32_t> prompt = {1, 2};
  zl_request request = greedy_request(prompt, 2);
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client, &request, &id), ZL_OK);
  ASSERT_EQ(read_until_terminal(client, id).status, ZL_OK);

  guard.kill_now();
  auto killed = Clock::now();
  zl_event event;
  int status = zl_client_next_event(client, &event, 10000);
  double noticed_s = seconds_since(killed);
  EXPECT_EQ(status, ZL_ERR_SERVER_DEAD) << zl_status_name(status);
  EXPECT_LT(noticed_s, 1.0);
  EXPECT_NE(std::string(zl_client_last_error(client)).find("server"), std::string::npos);
  zl_client_close(client);

  // The dead server's segment is still there; the next start replaces it.
  struct stat st;
  ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0) << "the killed server's segment should be left behind";
  auto engine = make_tiny_engine();
  auto server = ShmServer::start(*engine, {name, 16 << 20});
  ASSERT_TRUE(server.ok()) << server.status().message();
  ASSERT_EQ(zl_client_connect(name.c_str(), &client), ZL_OK);
  ASSERT_EQ(zl_client_submit(client, &request, &id), ZL_OK);
  EXPECT_EQ(read_until_terminal(client, id).terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
  zl_client_close(client);
  server->reset();
  EXPECT_NE(stat(("/dev/shm" + name).c_str(), &st), 0) << "a clean stop unlinks the segment";
}

}  // namespace
}  // namespace zl::test
