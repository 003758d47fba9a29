// Runs the pure-Python client's pytest suite (tests/python/test_shm_client.py)
// against servers started here: one in this process, and one in a child
// process that the suite kills with SIGKILL (reaped here at once, so its pid
// disappears as it would under a real supervisor). Skips without pytest.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "engine/collecting_sink.h"
#include "shm_test_util.h"
#include "test_util.h"

namespace zl::test {
namespace {

std::string repo_root() {
  std::string golden = golden_path("");
  return golden.substr(0, golden.rfind("tests/golden"));
}

std::string python_path() {
  std::string venv = repo_root() + ".venv/bin/python";
  return access(venv.c_str(), X_OK) == 0 ? venv : "python3";
}

std::string run_shell(const std::string& command, int* exit_code) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(ShmPython, PytestSuite) {
  int exit_code = 0;
  std::string python = python_path();
  run_shell(python + " -c 'import pytest'", &exit_code);
  if (exit_code != 0) GTEST_SKIP() << python << " has no pytest (scripts/setup.sh installs requirements-test.txt)";

  // The doomed server: forked before this process starts any thread.
  std::string doomed_name = unique_shm_name("py_doomed");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto engine = make_tiny_engine();
    auto server = ShmServer::start(*engine, {doomed_name, 16 << 20});
    if (!server.ok()) _exit(2);
    char c = 'r';
    (void)!write(ready[1], &c, 1);
    for (;;) pause();
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::thread reaper([child] { waitpid(child, nullptr, 0); });

  auto engine = make_tiny_engine();
  std::string name = unique_shm_name("py");
  ShmServerConfig config{name, 16 << 20};
  config.chat_template = "chatml";  // dummy:tiny has none of its own
  auto server = ShmServer::start(*engine, config);
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto sink = std::make_shared<CollectingSink>();
  Request request;
  request.prompt_ids = {1, 17, 42, 99, 7, 3};
  request.sampling.temperature = 0.0f;
  request.max_new_tokens = 24;
  request.ignore_eos = true;
  request.sink = sink;
  ASSERT_TRUE(engine->submit(std::move(request)).ok());
  ASSERT_TRUE(sink->wait(10));
  std::string expected;
  for (int32_t token : sink->tokens) {
    if (!expected.empty()) expected += ',';
    expected += std::to_string(token);
  }

  std::string root = repo_root();
  std::string command = "cd '" + root + "' && ZL_TEST_SHM_NAME='" + name + "' ZL_TEST_EXPECTED_TOKENS='" + expected +
                        "' ZL_TEST_DOOMED_SHM_NAME='" + doomed_name + "' ZL_TEST_DOOMED_PID=" + std::to_string(child) +
                        " PYTHONPATH='" + root + "clients/python' " + python +
                        " -m pytest -q -p no:cacheprovider tests/python/test_shm_client.py";
  std::string out = run_shell(command, &exit_code);
  kill(child, SIGKILL);  // in case the suite did not get that far
  reaper.join();
  EXPECT_EQ(exit_code, 0) << out;
  std::printf("%s\n", out.substr(out.size() > 2000 ? out.size() - 2000 : 0).c_str());
  shm_unlink(doomed_name.c_str());  // the killed server's leftovers
}

}  // namespace
}  // namespace zl::test
