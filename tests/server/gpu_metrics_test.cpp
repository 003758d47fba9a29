// GPU counters in GET /metrics: an HTTP server told that its engine runs on
// cuda:0 reads them through NVML, here the fake libnvidia-ml of
// tests/core/fake_nvml.c (37% / 21% utilisation, 12 GiB of 141 GiB), while
// the engine itself computes on the CPU (dummy:tiny). On the CPU, or when
// NVML is missing, the zerolayer:gpu_* metrics are absent and /metrics still
// answers 200.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "server/http_server.h"
#include "server/stats_monitor.h"
#include "test_util.h"
#include "transport/shm_test_util.h"

namespace zl::server {
namespace {

// GET `path` on 127.0.0.1:port with a fresh connection; the whole response.
std::string http_get(int32_t port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[8192];
      for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

class GpuMetricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    engine_ = test::make_tiny_engine().release();
    ASSERT_NE(engine_, nullptr);
  }
  static void TearDownTestSuite() { delete engine_; }

  // /metrics of a server configured with `device` and `library`.
  static std::string metrics(const Device& device, const std::string& library) {
    HttpServerConfig config;
    config.port = 0;
    config.served_model_name = "m";
    config.device = device;
    config.nvml_library = library;
    auto server = HttpServer::start(config);
    EXPECT_TRUE(server.ok()) << server.status().message();
    if (!server.ok()) return "";
    (*server)->attach_engine(*engine_);
    std::string response = http_get((*server)->port(), "/metrics");
    (*server)->shutdown(1.0);
    return response;
  }

  static Engine* engine_;
};
Engine* GpuMetricsTest::engine_ = nullptr;

const Device kCuda0{Device::Kind::kCuda, 0};

TEST_F(GpuMetricsTest, CudaDeviceExportsNvmlCounters) {
  std::string text = metrics(kCuda0, test::fake_nvml_path());
  ASSERT_EQ(text.rfind("HTTP/1.1 200", 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("# TYPE zerolayer:gpu_utilization_perc gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("zerolayer:gpu_utilization_perc{model_name=\"m\"} 0.37\n"), std::string::npos) << text;
  EXPECT_NE(text.find("zerolayer:gpu_memory_utilization_perc{model_name=\"m\"} 0.21\n"), std::string::npos) << text;
  EXPECT_NE(text.find("zerolayer:gpu_memory_used_bytes{model_name=\"m\"} " + std::to_string(12ull << 30) + "\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("zerolayer:gpu_memory_total_bytes{model_name=\"m\"} " + std::to_string(141ull << 30) + "\n"),
            std::string::npos) << text;
}

TEST_F(GpuMetricsTest, WithoutNvmlTheGpuMetricsAreAbsent) {
  std::string text = metrics(kCuda0, test::temp_dir() + "/no-libnvidia-ml.so.1");
  ASSERT_EQ(text.rfind("HTTP/1.1 200", 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"m\"}"), std::string::npos);
  EXPECT_EQ(text.find("zerolayer:gpu_"), std::string::npos) << text;
}

TEST_F(GpuMetricsTest, OnTheCpuTheGpuMetricsAreAbsent) {
  std::string text = metrics(Device{}, test::fake_nvml_path());
  ASSERT_EQ(text.rfind("HTTP/1.1 200", 0), 0u) << text.substr(0, 200);
  EXPECT_EQ(text.find("zerolayer:gpu_"), std::string::npos) << text;
}

TEST(PrometheusGpuMetrics, UnsupportedUtilisationLeavesOnlyMemory) {
  GpuSample sample;
  sample.memory_used_bytes = 5;
  sample.memory_total_bytes = 9;
  std::string text = prometheus_text(EngineStats{}, HttpCounters{}, "m", CacheConfigInfo{}, &sample);
  EXPECT_EQ(text.find("zerolayer:gpu_utilization_perc"), std::string::npos);
  EXPECT_EQ(text.find("zerolayer:gpu_memory_utilization_perc"), std::string::npos);
  EXPECT_NE(text.find("zerolayer:gpu_memory_used_bytes{model_name=\"m\"} 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("zerolayer:gpu_memory_total_bytes{model_name=\"m\"} 9\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace zl::server
