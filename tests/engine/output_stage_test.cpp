// The output stage: records become sink events in order, text is decoded
// and stop strings end a request with exactly one terminal event, whether
// the engine thread delivers (inline, small steps) or the stage's thread.
#include "engine/output_stage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "engine/inbox.h"
#include "collecting_sink.h"

namespace zl {
namespace {

struct Harness {
  explicit Harness(int32_t capacity = 64)
      : tokenizer(make_byte_tokenizer(258)),
        stage([this](RequestId id) { stops.push_back(id); }, capacity) {}

  // A request's output side, as submit() builds it (prompt "p").
  RequestOutput* make(RequestId id, std::shared_ptr<EventSink> sink, std::vector<std::string> stop = {},
                      bool skip_special = true) {
    return new RequestOutput(id, std::move(sink), std::move(stop), *tokenizer, skip_special, nullptr, {'p'});
  }
  void finish(RequestOutput* out, FinishReason reason, int32_t generated) {
    out->finish.id = out->id;
    out->finish.reason = reason;
    out->finish.num_generated_tokens = generated;
    stage.push_finish(out);
  }

  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<RequestId> stops;  // on_stop_string calls
  OutputStage stage;
};

TEST(OutputStageTest, InlineDeliversTextInOrderAndFlushesHeldBytes) {
  Harness h;
  auto sink = std::make_shared<test::CollectingSink>();
  RequestOutput* out = h.make(7, sink);
  for (int32_t t : {int32_t{'h'}, int32_t{'i'}, 0xE4, 0xBD}) h.stage.push_token(out, t, -0.5f, {});
  EXPECT_TRUE(sink->tokens.empty()) << "nothing is delivered before publish()";
  h.stage.publish();
  EXPECT_EQ(sink->tokens, (std::vector<int32_t>{'h', 'i', 0xE4, 0xBD}));
  EXPECT_EQ(sink->text, "hi");  // the partial character is held back
  EXPECT_EQ(sink->logprobs[0], -0.5f);
  h.finish(out, FinishReason::kLength, 4);
  h.stage.publish();
  EXPECT_EQ(sink->num_finish_events, 1);
  EXPECT_EQ(sink->finish.id, 7u);
  EXPECT_EQ(sink->finish.reason, FinishReason::kLength);
  EXPECT_EQ(sink->finish.num_generated_tokens, 4);
  EXPECT_EQ(sink->text, "hi\xEF\xBF\xBD");  // flushed at the end as U+FFFD
}

// Request::skip_special_tokens: a special token (<s>, 256) is text only when
// the request keeps them (tool-call markers such as [TOOL_CALLS]).
TEST(OutputStageTest, SpecialTokensAreTextOnlyWhenKept) {
  for (bool skip : {true, false}) {
    Harness h;
    auto sink = std::make_shared<test::CollectingSink>();
    RequestOutput* out = h.make(1, sink, {}, skip);
    for (int32_t t : {int32_t{'a'}, 256, int32_t{'b'}}) h.stage.push_token(out, t, 0.0f, {});
    h.finish(out, FinishReason::kLength, 3);
    h.stage.publish();
    EXPECT_EQ(sink->text, skip ? "ab" : "a<s>b");
  }
}

TEST(OutputStageTest, StopStringStopsOutputAndOverridesTheEnginesReason) {
  Harness h;
  auto sink = std::make_shared<test::CollectingSink>();
  RequestOutput* out = h.make(3, sink, {"XY"});
  for (int32_t t : std::vector<int32_t>{'a', 'X', 'Y', 'b', 'c'}) h.stage.push_token(out, t, 0.0f, {});
  h.stage.publish();
  EXPECT_EQ(h.stops, std::vector<RequestId>{3}) << "the engine is asked once to finish it";
  EXPECT_EQ(sink->tokens, (std::vector<int32_t>{'a', 'X', 'Y'})) << "tokens after the stop string are dropped";
  EXPECT_EQ(sink->text, "a");
  EXPECT_EQ(sink->num_finish_events, 0) << "the terminal event waits for the engine's finish record";
  // The engine ran one more step before it saw the stop, and hit its length.
  h.finish(out, FinishReason::kLength, 5);
  h.stage.publish();
  EXPECT_EQ(sink->num_finish_events, 1);
  EXPECT_EQ(sink->finish.reason, FinishReason::kStop);
  EXPECT_EQ(sink->finish.stop_detail, "stop string");
  EXPECT_EQ(sink->finish.num_generated_tokens, 3);
  EXPECT_EQ(sink->text, "a") << "the stop string's tail is not flushed";
}

TEST(OutputStageTest, TopLogprobsTravelWithTheirToken) {
  Harness h;
  struct TopSink : test::CollectingSink {
    void on_token(const TokenEvent& event) override {
      top_sizes.push_back(event.top_logprobs.size());
      CollectingSink::on_token(event);
    }
    std::vector<size_t> top_sizes;
  };
  auto top_sink = std::make_shared<TopSink>();
  RequestOutput* out = h.make(1, top_sink);
  const TokenLogprob top[] = {{'a', -1.0f}, {'b', -2.0f}};
  h.stage.push_token(out, 'a', -1.0f, top);
  h.stage.push_token(out, 'b', -2.0f, {});
  h.finish(out, FinishReason::kStop, 2);
  h.stage.publish();
  EXPECT_EQ(top_sink->top_sizes, (std::vector<size_t>{2, 0}));
  EXPECT_EQ(top_sink->num_finish_events, 1);
}

// Records the thread each event arrives on.
class ThreadSink : public test::CollectingSink {
 public:
  void on_token(const TokenEvent& event) override {
    {
      std::lock_guard<std::mutex> lock(mutex);
      threads.push_back(std::this_thread::get_id());
    }
    CollectingSink::on_token(event);
  }
  std::mutex mutex;
  std::vector<std::thread::id> threads;
};

TEST(OutputStageTest, ThreadedSmallStepIsDeliveredByThePublisherLargeOnesByTheStage) {
  Harness h(4096);
  h.stage.start_thread();
  auto small = std::make_shared<ThreadSink>();
  RequestOutput* out = h.make(1, small);
  h.stage.push_token(out, 'a', 0.0f, {});
  h.stage.publish();
  // The idle stage takes no part: the event is already there, on this thread.
  ASSERT_EQ(small->tokens.size(), 1u);
  EXPECT_EQ(small->threads[0], std::this_thread::get_id());
  h.finish(out, FinishReason::kLength, 1);
  h.stage.publish();
  EXPECT_EQ(small->num_finish_events, 1);

  auto large = std::make_shared<ThreadSink>();
  RequestOutput* big = h.make(2, large);
  for (int i = 0; i < 1000; ++i) h.stage.push_token(big, 'a' + i % 26, 0.0f, {});
  h.finish(big, FinishReason::kLength, 1000);
  h.stage.publish();
  ASSERT_TRUE(large->wait(30.0));
  ASSERT_EQ(large->tokens.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(large->tokens[static_cast<size_t>(i)], 'a' + i % 26) << i;
  EXPECT_NE(large->threads[0], std::this_thread::get_id());
  EXPECT_EQ(large->num_finish_events, 1);
}

TEST(OutputStageTest, AFullRingWaitsForTheStageAndLosesNothing) {
  Harness h(8);  // far fewer slots than records
  h.stage.start_thread();
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  std::vector<RequestOutput*> outs;
  for (RequestId id = 1; id <= 3; ++id) {
    sinks.push_back(std::make_shared<test::CollectingSink>());
    outs.push_back(h.make(id, sinks.back()));
  }
  for (int step = 0; step < 300; ++step) {
    for (RequestOutput* out : outs) h.stage.push_token(out, 'a' + step % 26, 0.0f, {});
    h.stage.publish();
  }
  for (RequestOutput* out : outs) h.finish(out, FinishReason::kLength, 300);
  h.stage.publish();
  for (auto& sink : sinks) {
    ASSERT_TRUE(sink->wait(30.0));
    ASSERT_EQ(sink->tokens.size(), 300u);
    for (int step = 0; step < 300; ++step) ASSERT_EQ(sink->tokens[static_cast<size_t>(step)], 'a' + step % 26);
    EXPECT_EQ(sink->num_finish_events, 1);
  }
}

TEST(OutputStageTest, WhileStepsKeepComingTheStageNapsAndIsNotWoken) {
  Harness h(4096);
  h.stage.start_thread();
  auto sink = std::make_shared<test::CollectingSink>();
  RequestOutput* out = h.make(4, sink);
  constexpr int kSteps = 40, kRecords = 2 * OutputStage::kInlineRecords;  // each step goes to the stage
  for (int step = 0; step < kSteps; ++step) {
    for (int i = 0; i < kRecords; ++i) h.stage.push_token(out, 'a' + step % 26, 0.0f, {});
    h.stage.publish();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a forward pass
  }
  h.finish(out, FinishReason::kLength, kSteps * kRecords);
  h.stage.publish();
  ASSERT_TRUE(sink->wait(30.0));
  EXPECT_EQ(sink->tokens.size(), size_t{kSteps * kRecords});
  // At most the first publish wakes the stage (if it slept already); then it
  // naps between steps (it slept once idle before, and every publish woke
  // it). Only a stall of this thread past the nap window (>= 50 ms) puts it
  // back to sleep.
  EXPECT_LE(h.stage.num_wakes(), uint64_t{kSteps / 4}) << "of " << kSteps + 1 << " publishes";
}

TEST(OutputStageTest, DestructionDeliversWhatWasPublished) {
  auto sink = std::make_shared<test::CollectingSink>();
  {
    Harness h(64);
    h.stage.start_thread();
    RequestOutput* out = h.make(9, sink);
    for (int i = 0; i < 100; ++i) h.stage.push_token(out, 'z', 0.0f, {});
    h.finish(out, FinishReason::kAborted, 100);
  }
  EXPECT_EQ(sink->tokens.size(), 100u);
  EXPECT_EQ(sink->num_finish_events, 1);
  EXPECT_EQ(sink->finish.reason, FinishReason::kAborted);
}

}  // namespace
}  // namespace zl
