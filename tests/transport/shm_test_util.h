// Helpers for the shared-memory tests: a small dummy:tiny engine, unique
// segment names, and reading one request's events through the C client.
#pragma once

#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "transport/shm_server.h"
#include "zerolayer/client.h"
#include "zerolayer/engine.h"

namespace zl::test {

inline std::unique_ptr<Engine> make_tiny_engine() {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 1;
  config.kv_cache_bytes = 16 << 20;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.ok() ? std::move(*engine) : nullptr;
}

inline std::string unique_shm_name(const char* what) {
  static std::atomic<int> counter{0};
  return "/zl_test_" + std::string(what) + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
}

struct ShmResult {
  std::vector<int32_t> tokens;
  std::string text;
  zl_shm_response terminal{};
  uint64_t terminal_read_ns = 0;  // CLOCK_MONOTONIC when the client read the terminal record
  int num_terminal = 0;
  int status = ZL_OK;
};

// Reads events of `id` until its terminal record (events of other ids fail the test).
inline ShmResult read_until_terminal(zl_client* client, uint64_t id, int timeout_ms = 10000) {
  ShmResult result;
  zl_event event;
  for (;;) {
    result.status = zl_client_next_event(client, &event, timeout_ms);
    if (result.status != ZL_OK) return result;
    const zl_shm_response& r = event.record;
    EXPECT_EQ(r.client_request_id, id);
    if (r.kind == ZL_SHM_RESPONSE_TOKEN) result.tokens.push_back(r.token);
    if (r.kind == ZL_SHM_RESPONSE_TOKEN || r.kind == ZL_SHM_RESPONSE_TEXT) result.text.append(r.text, r.text_bytes);
    if (zl_event_is_terminal(&event)) {
      result.terminal = r;
      result.terminal_read_ns = event.read_ns;
      result.num_terminal++;
      return result;
    }
  }
}

// `prompt` must outlive the returned request (it points into it).
inline zl_request greedy_request(const std::vector<int32_t>& prompt, int32_t max_new_tokens) {
  zl_request request;
  zl_request_init(&request);
  request.prompt_ids = prompt.data();
  request.num_prompt_ids = uint32_t(prompt.size());
  request.sampling.temperature = 0.0f;
  request.max_new_tokens = max_new_tokens;
  request.ignore_eos = 1;
  return request;
}

}  // namespace zl::test
