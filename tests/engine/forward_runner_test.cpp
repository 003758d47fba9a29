// The runner's handshakes with the engine thread, on dummy:tiny.
#include "engine/forward_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tiny_model.h"

namespace zl {
namespace {

// One sequence's 4-token prompt, its last row's logits wanted.
struct OnePrompt {
  explicit OnePrompt(const test::TinyModel& tiny)
      : logits(static_cast<size_t>(tiny.source.config.vocab_size)) {
    chunks.push_back(SeqChunk{0, 4, 0, table, {}});
    job.batch = ForwardBatch{tokens, chunks, rows};
    job.tokens = tokens;
    job.logits = logits.data();
    job.next_tokens = next_tokens.data();
  }

  std::vector<int32_t> tokens = {1, 5, 9, 13};
  std::vector<int32_t> table = {0};
  std::vector<SeqChunk> chunks;
  std::vector<int32_t> rows = {3};
  std::vector<float> logits;
  std::vector<int32_t> next_tokens = {-1};
  ForwardJob job;
};

TEST(ForwardRunnerTest, APassThatEndsWakesTheEngineSleepingUntilItsDeadline) {
  test::TinyModel tiny(16, 4, 8);
  ForwardRunner runner(tiny.model, *tiny.cache);
  OnePrompt pass(tiny);
  runner.submit(&pass.job);
  const Clock::time_point start = Clock::now();
  // Far off: only the runner's wake-up at the pass's end returns it soon.
  EXPECT_TRUE(runner.sleep_until(start + std::chrono::seconds(30)));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  ForwardJob* job = runner.wait();
  ASSERT_EQ(job, &pass.job);
  EXPECT_TRUE(job->status.ok()) << job->status.message();
  EXPECT_GE(pass.next_tokens[0], 0);
}

TEST(ForwardRunnerTest, SleepUntilAPastDeadlineReturnsAtOnce) {
  test::TinyModel tiny(16, 4, 8);
  ForwardRunner runner(tiny.model, *tiny.cache);
  OnePrompt pass(tiny);
  runner.submit(&pass.job);
  runner.sleep_until(Clock::now() - std::chrono::seconds(1));  // must not block
  EXPECT_EQ(runner.outstanding(), 1);
  EXPECT_EQ(runner.wait(), &pass.job);
  EXPECT_EQ(runner.outstanding(), 0);
}

}  // namespace
}  // namespace zl
