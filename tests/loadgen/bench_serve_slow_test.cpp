// `zerolayer bench` against a real `zerolayer serve` on dummy:tiny, over HTTP
// and over shared memory: every request of every pass completes, with the
// exact token counts the workload asked for (ignore_eos), and the result file
// carries what the report promises (server queue times, the command).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace zl::test {
namespace {

using json = nlohmann::json;

class BenchAgainstServe : public ::testing::Test {
 protected:
  void SetUp() override {
    shm_name_ = "/zl-bench-test-" + std::to_string(getpid());
    server_ = std::make_unique<CliProcess>(std::vector<std::string>{
        "serve", "--model", "dummy:tiny", "--port", "0", "--shm-name", shm_name_, "--threads", "1"});
    // "serving ... on http://127.0.0.1:PORT" is printed once the model is loaded and shm is up.
    const std::regex ready("serving .* on http://[^:]+:(\\d+)");
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      std::smatch m;
      std::string log = server_->output();
      if (std::regex_search(log, m, ready)) port_ = std::stoi(m[1]);
      else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_NE(port_, 0) << server_->output();
  }

  json bench(std::vector<std::string> args) {
    std::string result_file = temp_dir() + "/bench-" + std::to_string(runs_++) + ".json";
    args.insert(args.begin(), "bench");
    for (const char* a : {"--num-prompts", "12", "--random-input-len", "24", "--random-output-len", "9",
                          "--seed", "5", "--result-file"})
      args.push_back(a);
    args.push_back(result_file);
    CommandResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err << server_->output();
    EXPECT_NE(r.out.find("| rate (req/s) |"), std::string::npos) << r.out;  // the markdown table
    std::ifstream in(result_file);
    return json::parse(in, nullptr, false);
  }

  void expect_every_request_completed(const json& result, size_t num_passes) {
    ASSERT_FALSE(result.is_discarded());
    ASSERT_EQ(result["runs"].size(), num_passes);
    for (const json& run : result["runs"]) {
      EXPECT_EQ(run["completed"], 12) << run.dump();
      EXPECT_EQ(run["failed"], 0) << run.dump();
      EXPECT_EQ(run["total_output_tokens"], 12 * 9);
      EXPECT_GE(run["total_input_tokens"].get<int>(), 12 * 24);  // the server may add bos
      EXPECT_GT(run["p99_ttft_ms"].get<double>(), 0.0);
      EXPECT_GE(run["p99_ttft_ms"].get<double>(), run["median_ttft_ms"].get<double>());
      EXPECT_GT(run["mean_tpot_ms"].get<double>(), 0.0);
      EXPECT_GT(run["output_throughput"].get<double>(), 0.0);
      EXPECT_TRUE(run["queued_fraction"].is_number()) << "zerolayer reports its queue time";
    }
  }

  std::string shm_name_;
  std::unique_ptr<CliProcess> server_;
  int port_ = 0;
  int runs_ = 0;
};

TEST_F(BenchAgainstServe, HttpRateSweepCompletesEveryRequest) {
  json result = bench({"--base-url", "http://127.0.0.1:" + std::to_string(port_), "--request-rate", "50,inf",
                       "--goodput", "ttft:60000"});
  expect_every_request_completed(result, 2);
  EXPECT_EQ(result["model"], "dummy:tiny");  // from GET /v1/models
  EXPECT_NE(result["command"].get<std::string>().find("--request-rate 50,inf"), std::string::npos);
  EXPECT_EQ(result["runs"][1]["request_rate"], "inf");
  // Every request met a one-minute TTFT objective, so goodput equals throughput.
  EXPECT_DOUBLE_EQ(result["runs"][0]["request_goodput"].get<double>(),
                   result["runs"][0]["request_throughput"].get<double>());
}

TEST_F(BenchAgainstServe, ShmFixedConcurrencyCompletesEveryRequest) {
  json result = bench({"--shm-name", shm_name_, "--max-concurrency", "3", "--prefix-len", "16"});
  expect_every_request_completed(result, 1);
  EXPECT_EQ(result["runs"][0]["num_workers"], 3);
  EXPECT_EQ(result["runs"][0]["total_input_tokens"], 12 * (24 + 16));  // ids go in as they are
}

TEST(BenchCli, RefusesAWrongTargetClearly) {
  CommandResult r = run_cli({"bench", "--shm-name", "/zl-no-such-segment"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--shm-name /zl-no-such-segment"), std::string::npos) << r.err;
  r = run_cli({"bench", "--base-url", "http://127.0.0.1:1", "--model", "m", "--num-prompts", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("warm-up request failed"), std::string::npos) << r.err;
  r = run_cli({"bench"});
  EXPECT_NE(r.err.find("exactly one of --base-url and --shm-name"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace zl::test
