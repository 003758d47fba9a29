// CompletionJob's lifetime on dummy:tiny, with a fake connection whose
// strand is the test thread: a job whose client leaves aborts its choices
// and, once gone, leaves nothing in the registry. (The 30-minute soak found
// the registry keeping an expired entry, and with it the job's memory, for
// every client that left: RSS +3.3%.)
#include "server/completion_job.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

#include "core/fault.h"
#include "transport/shm_test_util.h"  // make_tiny_engine
#include "zerolayer/engine.h"

namespace zl::server {
namespace {

class FakeConnection : public ResponseWriter {
 public:
  void respond(int status, std::string, std::string body, HttpHeaders) override {
    last_status = status;
    last_body = std::move(body);
  }
  void begin_stream() override {}
  void write_raw(std::string chunk) override { chunks.push_back(std::move(chunk)); }
  void end_stream() override {}
  void note_usage(const AccessUsage& u) override { usage = u; }
  bool is_closed() const override { return closed; }
  void set_on_close(std::function<void()> fn) override { on_close = std::move(fn); }
  void post(std::function<void()> fn) override {
    std::lock_guard<std::mutex> lock(mutex);
    posted.push_back(std::move(fn));
  }

  // The peer leaves: as the HTTP session, run the callback once and drop it.
  void close() {
    closed = true;
    std::function<void()> fn = std::move(on_close);
    on_close = nullptr;
    if (fn) fn();
  }
  // Runs what was posted until `done` or the timeout; false on timeout.
  template <typename Done>
  bool run_until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::deque<std::function<void()>> batch;
      {
        std::lock_guard<std::mutex> lock(mutex);
        batch.swap(posted);
      }
      for (auto& fn : batch) fn();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  int last_status = 0;
  std::string last_body;
  std::vector<std::string> chunks;  // streamed, as written
  AccessUsage usage;
  bool closed = false;
  std::function<void()> on_close;
  std::mutex mutex;
  std::deque<std::function<void()>> posted;
};

class CompletionJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = test::make_tiny_engine();
    ASSERT_NE(engine_, nullptr);
  }

  // A 3-token prompt, up to max_tokens tokens a choice.
  static CompletionRequest request_of(int32_t max_tokens) {
    CompletionRequest request;
    request.prompts = {{256, 10, 20}};
    request.max_tokens = max_tokens;
    return request;
  }
  std::shared_ptr<CompletionJob> make_job(const std::shared_ptr<FakeConnection>& connection, CompletionRequest request) {
    JobContext context{engine_.get(), gate_, &registry_, &disconnects_, {}};
    return std::make_shared<CompletionJob>(std::move(context), connection, std::move(request), ResponseMeta{});
  }
  std::shared_ptr<CompletionJob> make_job(const std::shared_ptr<FakeConnection>& connection, bool stream) {
    CompletionRequest request = request_of(400);
    request.n = 4;
    request.ignore_eos = true;
    request.stream = stream;
    return make_job(connection, std::move(request));
  }

  bool engine_idle() {
    EngineStats stats = engine_->stats();
    return stats.num_running + stats.num_waiting == 0 && stats.kv.num_used_blocks == 0;
  }

  std::unique_ptr<Engine> engine_;
  std::shared_ptr<PostGate> gate_ = std::make_shared<PostGate>();
  JobRegistry registry_;
  std::atomic<int64_t> disconnects_{0};
};

TEST_F(CompletionJobTest, AJobWhoseClientLeftLeavesTheRegistryWhenItGoes) {
  for (bool stream : {false, true}) {
    auto connection = std::make_shared<FakeConnection>();
    std::weak_ptr<CompletionJob> weak;
    {
      auto job = make_job(connection, stream);
      weak = job;
      job->start();
    }
    EXPECT_EQ(registry_.size(), 1u);
    connection->close();  // drops the connection's hold on the job
    EXPECT_EQ(disconnects_.load(), stream ? 2 : 1);
    ASSERT_TRUE(connection->run_until([&] { return weak.expired() && engine_idle(); }));
    EXPECT_EQ(registry_.size(), 0u) << (stream ? "streamed" : "whole");
  }
}

TEST_F(CompletionJobTest, AFinishedJobLeavesTheRegistry) {
  auto connection = std::make_shared<FakeConnection>();
  auto job = make_job(connection, false);
  job->start();
  ASSERT_TRUE(connection->run_until([&] { return connection->last_status != 0; }));
  EXPECT_EQ(connection->last_status, 200);
  EXPECT_EQ(registry_.size(), 0u);
  // The access log's figures came with the answer.
  EXPECT_TRUE(connection->usage.ran);
  EXPECT_EQ(connection->usage.prompt_tokens, 3);
  EXPECT_GT(connection->usage.completion_tokens, 0);
  EXPECT_GT(connection->usage.first_token_s, 0.0);
}

// A streamed choice whose forward pass fails after a few tokens: when those
// tokens and the failure reach the connection in one drain, the tokens go
// out before the error chunk (they used to be dropped).
TEST_F(CompletionJobTest, AFailureStreamsTheTokensBeforeIt) {
  auto connection = std::make_shared<FakeConnection>();
  CompletionRequest request = request_of(40);
  request.ignore_eos = true;
  request.stream = true;
  request.return_token_ids = true;
  auto job = make_job(connection, std::move(request));
  fault::arm(fault::Point::kForward, {.after = 5, .count = 1});
  job->start();
  // Nothing is drained until the engine is done, so every event of the
  // choice arrives in one drain.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!engine_idle() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  fault::disarm_all();
  ASSERT_TRUE(engine_idle());
  ASSERT_TRUE(connection->run_until([&] { return registry_.size() == 0; }));
  size_t num_tokens = 0;
  size_t error_at = connection->chunks.size();
  for (size_t i = 0; i < connection->chunks.size(); ++i) {
    const std::string& chunk = connection->chunks[i];  // HTTP chunk framing around "data: {...}\n\n"
    const size_t begin = chunk.find("data: {"), end = chunk.find("\n\n", begin);
    if (begin == std::string::npos || end == std::string::npos) continue;
    const nlohmann::json body = nlohmann::json::parse(chunk.substr(begin + 6, end - begin - 6));
    if (body.contains("error")) {
      error_at = std::min(error_at, i);
      EXPECT_NE(body["error"]["message"].get<std::string>().find("injected fault"), std::string::npos) << chunk;
    } else {
      EXPECT_EQ(error_at, connection->chunks.size()) << "a token chunk after the error";
      num_tokens += body["choices"][0].value("token_ids", nlohmann::json::array()).size();
    }
  }
  ASSERT_LT(error_at, connection->chunks.size()) << "no error chunk";
  // The prefill and four decodes gave a token each.
  EXPECT_EQ(num_tokens, 5u);
}

// The Responses usage counts as reasoning each token fed while inside the
// reasoning (the closing tag's included): a regex makes the output exactly
// "abc</think>xyz" on the byte vocabulary, a token a byte.
TEST_F(CompletionJobTest, ReasoningTokensAreTheTokensInsideTheReasoning) {
  auto connection = std::make_shared<FakeConnection>();
  CompletionRequest request = request_of(40);
  request.chat = true;
  request.reasoning = ReasoningFormat::kThink;
  request.reasoning_opened = true;
  request.structured_output.kind = StructuredOutput::Kind::kRegex;
  request.structured_output.spec = "abc</think>xyz";
  ResponsesRequest responses;
  responses.store = false;
  request.responses = std::make_shared<const ResponsesRequest>(std::move(responses));
  auto job = make_job(connection, std::move(request));
  job->start();
  ASSERT_TRUE(connection->run_until([&] { return connection->last_status != 0; }));
  ASSERT_EQ(connection->last_status, 200) << connection->last_body;
  const nlohmann::json response = nlohmann::json::parse(connection->last_body);
  EXPECT_EQ(response["usage"]["output_tokens"], 14);
  EXPECT_EQ(response["usage"]["output_tokens_details"]["reasoning_tokens"], 11);
  EXPECT_EQ(response["output"][0]["content"][0]["text"], "abc");
}

}  // namespace
}  // namespace zl::server
