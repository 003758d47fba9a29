// Runs the HTTP server's end-to-end suites under ctest: test_http_server.py
// (the real `zerolayer serve` driven by the official `openai` package and by
// raw sockets), test_metrics.py (`/metrics` read by prometheus-client's
// parser), test_faults.py, and the agent-facing suites
// test_structured_output.py, test_tool_calls.py, test_agent_clients.py
// (langchain-openai, instructor), test_released_model.py (Gemma 3 270M
// served beside llama.cpp's goldens), test_responses.py (/v1/responses,
// openai-agents) and test_openai_fidelity.py (logprobs); and the operator's:
// test_deploy.py (Kubernetes manifests, alert rules, dashboard),
// test_serve_ops.py (signals, drain, TLS, CORS, access log) and
// test_kv_events.py (KV-cache events for routers), test_router.py (three
// replicas behind vllm-router). It needs .venv with
// requirements-test.txt's packages, which scripts/setup.sh installs; without
// the core ones the test reports skipped rather than passing silently (the
// suites skip a client library that is missing).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace zl::test {
namespace {

namespace fs = std::filesystem;

std::string repo_root() {
  std::string golden = golden_path("");  // <repo>/tests/golden/
  return fs::path(golden).parent_path().parent_path().parent_path().string();
}

// The zerolayer binary of this build: tests live in <build>/tests/.
std::string cli_path() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path candidate = self.parent_path().parent_path() / "zerolayer";
  return !ec && fs::exists(candidate) ? candidate.string() : repo_root() + "/build/zerolayer";
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

TEST(HttpServerPython, PytestSuitePasses) {
  const std::string root = repo_root();
  const std::string python = root + "/.venv/bin/python";
  if (!fs::exists(python)) GTEST_SKIP() << python << " is missing (scripts/setup.sh creates it)";
  if (std::system((quote(python) + " -c 'import openai, prometheus_client, pytest, jsonschema' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "openai, prometheus-client, pytest or jsonschema is not installed in .venv (pip install -r requirements-test.txt)";
  std::string shared = shared_path("");
  std::string command = "cd " + quote(root) + " && ZEROLAYER_BIN=" + quote(cli_path()) +
                        (shared.empty() ? "" : " ZL_SHARED_DIR=" + quote(shared)) + " " + quote(python) +
                        " -m pytest tests/python/test_http_server.py tests/python/test_metrics.py tests/python/test_faults.py tests/python/test_structured_output.py tests/python/test_tool_calls.py tests/python/test_agent_clients.py tests/python/test_released_model.py tests/python/test_responses.py tests/python/test_openai_fidelity.py tests/python/test_deploy.py tests/python/test_serve_ops.py tests/python/test_kv_events.py tests/python/test_router.py -q -p no:cacheprovider 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  int status = pclose(pipe);
  std::printf("%s", output.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 0) << output;
}

}  // namespace
}  // namespace zl::test
