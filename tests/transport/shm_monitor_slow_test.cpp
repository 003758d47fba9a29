// `zerolayer monitor` (the real CLI, run as a subprocess) against a server
// in this process, with requests sent over shared memory by the C client:
// each request's phases add up to the end-to-end time the client measured
// (within 5%), queue time is zero while capacity remains, a repeated shared
// prefix shows in the signature histogram, and a missing or foreign segment
// is a clear error. A model with steps of milliseconds (dummy:llama-110m)
// keeps a busy machine's scheduling noise well under the 5%.
#include <fcntl.h>
#include <sys/mman.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "shm_test_util.h"
#include "transport/shm_ring.h"
#include "test_util.h"

namespace zl::test {
namespace {

using json = nlohmann::json;

class ShmMonitorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    EngineConfig config;
    config.model = "dummy:llama-110m";
    config.num_threads = 1;
    config.max_num_seqs = 4;
    config.kv_cache_bytes = 64 << 20;
    auto engine = Engine::create(config);
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    engine_ = engine->release();
    name_ = new std::string(unique_shm_name("monitor"));
    auto server = ShmServer::start(*engine_, {*name_, 16 << 20});
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete engine_;
    delete name_;
  }
  void SetUp() override {
    ASSERT_EQ(zl_client_connect(name_->c_str(), &client_), ZL_OK) << zl_client_last_error(nullptr);
    // Read each record as soon as it lands: every wait spins up to 100 ms
    // (no adaptive policy, whose backoff after a preemption would sleep).
    zl_client_set_spin_us(client_, 100000);
    zl_client_set_adaptive_spin_us(client_, 0);
  }
  void TearDown() override { zl_client_close(client_); }

  // Sends one greedy request; returns its client id and the client's end to
  // end time (before submit -> terminal record read).
  std::pair<uint64_t, uint64_t> send(const std::vector<int32_t>& prompt, int max_new) {
    zl_request request;
    zl_request_init(&request);
    request.prompt_ids = prompt.data();
    request.num_prompt_ids = uint32_t(prompt.size());
    request.max_new_tokens = max_new;
    request.ignore_eos = 1;
    request.sampling.temperature = 0.0f;
    uint64_t id = 0;
    const uint64_t start = shm::now_ns();
    EXPECT_EQ(zl_client_submit(client_, &request, &id), ZL_OK) << zl_client_last_error(client_);
    ShmResult result = read_until_terminal(client_, id, 60000);
    EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
    return {id, result.terminal_read_ns - start};
  }

  static json monitor_json() {
    CommandResult r = run_cli({"monitor", "--shm-name", *name_, "--json", "--once"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  // This client's record for request `id` (the ring holds every client's).
  static json find_request(const json& doc, uint64_t id) {
    json found;
    for (const json& r : doc["requests"])
      if (r["transport"] == "shm" && r["client_tag"] == id) found = r;
    return found;
  }

  static Engine* engine_;
  static ShmServer* server_;
  static std::string* name_;
  zl_client* client_ = nullptr;
};
Engine* ShmMonitorTest::engine_ = nullptr;
ShmServer* ShmMonitorTest::server_ = nullptr;
std::string* ShmMonitorTest::name_ = nullptr;

TEST_F(ShmMonitorTest, PhasesAddUpToTheClientsEndToEndTime) {
  std::vector<std::pair<uint64_t, uint64_t>> sent;
  for (int i = 0; i < 3; ++i) sent.push_back(send({1, 20 + i, 30, 40, 50, 60}, 6));
  const json doc = monitor_json();
  for (const auto& [id, client_e2e_ns] : sent) {
    json r = find_request(doc, id);
    ASSERT_FALSE(r.is_null()) << "request " << id << " is not in the ring: " << doc["requests"].dump();
    uint64_t sum = 0;
    for (const auto& [phase, ns] : r["phases_ns"].items()) sum += ns.get<uint64_t>();
    const uint64_t total = r["total_ns"];
    EXPECT_EQ(sum, total) << r.dump();
    EXPECT_NEAR(double(total), double(client_e2e_ns), 0.05 * double(client_e2e_ns)) << r.dump();
    std::printf("request %llu: client end to end %.1f us, monitor total %.1f us\n", (unsigned long long)id,
                double(client_e2e_ns) / 1e3, double(total) / 1e3);
    EXPECT_EQ(r["phases_ns"]["queue"], 0) << "four slots, one request at a time: nothing waits for capacity";
    EXPECT_GT(r["phases_ns"]["transport_in"].get<uint64_t>(), 0u) << "the record carries the client's send time";
    EXPECT_GT(r["sent_ns"].get<uint64_t>(), 0u);
    EXPECT_EQ(r["decode_steps"]["count"], 5);
    EXPECT_EQ(r["num_generated_tokens"], 6);
  }
  EXPECT_EQ(doc["histograms"]["phase_queue_ns"]["max"], 0);
  EXPECT_GE(doc["counters"]["num_requests_traced"].get<int64_t>(), 3);

  // The text view shows the same phases for the newest request, adding up to its total.
  CommandResult text = run_cli({"monitor", "--shm-name", *name_, "--latency-breakdown", "--once", "--requests", "1"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const json newest = find_request(doc, sent.back().first);
  EXPECT_NE(text.out.find("request " + std::to_string(newest["request_id"].get<uint64_t>()) + " (shm"), std::string::npos)
      << text.out;
  std::smatch m;
  double phase_sum_us = 0;
  std::string rest = text.out.substr(0, text.out.find("Aggregate"));
  for (const char* phase : {"transport_in", "admission", "queue", "prefill", "decode", "other", "transport_out"}) {
    ASSERT_TRUE(std::regex_search(rest, m, std::regex(std::string("\n  ") + phase + " +([0-9.]+)"))) << phase << text.out;
    phase_sum_us += std::stod(m[1]);
  }
  ASSERT_TRUE(std::regex_search(rest, m, std::regex("\n  total +([0-9.]+)"))) << text.out;
  EXPECT_NEAR(phase_sum_us, std::stod(m[1]), 0.5) << text.out;  // rounding to 0.1 µs per line
  EXPECT_NEAR(std::stod(m[1]) * 1e3, newest["total_ns"].get<double>(), 100.0);
}

TEST_F(ShmMonitorTest, SignatureHistogramCountsARepeatedSharedPrefix) {
  std::vector<int32_t> prefix(32);  // two full KV blocks of 16 tokens
  for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = int32_t(700 + i);
  uint64_t hits_before = 0;
  const json before = monitor_json();  // named: a range-for over a temporary's element dangles
  for (const json& s : before["signatures"]) hits_before += s["num_blocks"] == 2 ? s["hits"].get<uint64_t>() : 0;
  for (int32_t i = 0; i < 3; ++i) {
    std::vector<int32_t> prompt = prefix;
    prompt.insert(prompt.end(), {900 + i, 901 + i});
    send(prompt, 2);
  }
  const json doc = monitor_json();
  const json* chain = nullptr;
  for (const json& s : doc["signatures"])
    if (s["num_blocks"] == 2 && s["num_tokens"] == 32) chain = &s;
  ASSERT_NE(chain, nullptr) << doc["signatures"].dump();
  EXPECT_EQ((*chain)["hits"].get<uint64_t>() - hits_before, 2u) << "the first request computed the prefix";
  EXPECT_GE((*chain)["tokens_saved"].get<uint64_t>(), 64u);
  CommandResult text = run_cli({"monitor", "--shm-name", *name_, "--signature-histogram", "--once"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find((*chain)["root"].get<std::string>().substr(0, 12)), std::string::npos) << text.out;
}

TEST_F(ShmMonitorTest, SummaryAndConfigViews) {
  CommandResult summary = run_cli({"monitor", "--shm-name", *name_, "--once"});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("running 0 · waiting 0"), std::string::npos) << summary.out;
  EXPECT_EQ(summary.out.find("\x1b["), std::string::npos) << "no terminal escapes when stdout is a file";
  CommandResult config = run_cli({"monitor", "--shm-name", *name_, "--config", "--once"});
  ASSERT_EQ(config.exit_code, 0) << config.err;
  EXPECT_NE(config.out.find("dummy:llama-110m"), std::string::npos) << config.out;
  EXPECT_NE(config.out.find("max num seqs             4"), std::string::npos) << config.out;
  EXPECT_NE(config.out.find("device                   cpu"), std::string::npos) << config.out;
}

// The monitor reads the GPU's counters itself through NVML, here the fake
// libnvidia-ml of tests/core/fake_nvml.c (37% / 21%, 12 GiB of 141 GiB).
TEST_F(ShmMonitorTest, GpuCountersComeFromNvmlForACudaDevice) {
  setenv("ZEROLAYER_NVML_LIBRARY", fake_nvml_path().c_str(), 1);
  CommandResult with = run_cli({"monitor", "--shm-name", *name_, "--json", "--once", "--device", "cuda:0"});
  CommandResult text = run_cli({"monitor", "--shm-name", *name_, "--once", "--device", "cuda:0"});
  CommandResult cpu = run_cli({"monitor", "--shm-name", *name_, "--json", "--once", "--device", "cpu"});
  // Without --device the monitor takes the server's (cpu, from its stats region).
  CommandResult own = run_cli({"monitor", "--shm-name", *name_, "--json", "--once"});
  setenv("ZEROLAYER_NVML_LIBRARY", (temp_dir() + "/no-libnvidia-ml.so.1").c_str(), 1);
  CommandResult missing = run_cli({"monitor", "--shm-name", *name_, "--json", "--once", "--device", "cuda:0"});
  unsetenv("ZEROLAYER_NVML_LIBRARY");

  ASSERT_EQ(with.exit_code, 0) << with.err;
  const json gpu = json::parse(with.out)["gpu"];
  EXPECT_EQ(gpu["device"], "cuda:0");
  EXPECT_EQ(gpu["name"], "Fake H200");
  EXPECT_DOUBLE_EQ(gpu["sm_utilization"].get<double>(), 0.37);
  EXPECT_DOUBLE_EQ(gpu["memory_utilization"].get<double>(), 0.21);
  EXPECT_EQ(gpu["memory_used_bytes"], 12ull << 30);
  EXPECT_EQ(gpu["memory_total_bytes"], 141ull << 30);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("gpu         cuda:0 Fake H200 · kernels running 37% · memory busy 21% · memory used 12.0 of "
                          "141.0 GiB"),
            std::string::npos)
      << text.out;

  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_FALSE(json::parse(cpu.out).contains("gpu"));
  EXPECT_FALSE(json::parse(cpu.out).contains("gpu_unavailable"));
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_FALSE(json::parse(own.out).contains("gpu"));
  EXPECT_FALSE(json::parse(own.out).contains("gpu_unavailable"));
  ASSERT_EQ(missing.exit_code, 0) << missing.err;
  const json doc = json::parse(missing.out);
  EXPECT_FALSE(doc.contains("gpu"));
  EXPECT_NE(doc["gpu_unavailable"]["reason"].get<std::string>().find("no-libnvidia-ml.so.1"), std::string::npos)
      << missing.out;
}

TEST(ShmMonitorErrors, MissingOrForeignSegmentsAreClearErrors) {
  CommandResult missing = run_cli({"monitor", "--shm-name", "/zl_test_monitor_missing", "--once"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no zerolayer server at /zl_test_monitor_missing"), std::string::npos) << missing.err;

  // A segment of a future protocol version.
  const std::string name = unique_shm_name("monitor_foreign");
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1 << 20), 0);
  zl_shm_header header{};
  header.magic = ZL_SHM_MAGIC;
  header.version = ZL_SHM_VERSION + 1;
  ASSERT_EQ(pwrite(fd, &header, sizeof(header), 0), ssize_t(sizeof(header)));
  close(fd);
  CommandResult foreign = run_cli({"monitor", "--shm-name", name, "--once"});
  shm_unlink(name.c_str());
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_NE(foreign.err.find(str_cat("protocol version ", ZL_SHM_VERSION + 1)), std::string::npos) << foreign.err;
}

}  // namespace
}  // namespace zl::test
