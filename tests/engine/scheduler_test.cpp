// The scheduler and the postprocess stage driven on their own, with no
// forward pass: the scheduler reads the request table and writes a plan;
// postprocess takes the tokens a pass would have put in the plan.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "engine/postprocess.h"
#include "tiny_model.h"

namespace zl {
namespace {

struct NoSink : EventSink {
  void on_token(const TokenEvent&) override {}
  void on_finish(const FinishEvent&) override {}
};

class SchedulerTest : public ::testing::Test {
 protected:
  ~SchedulerTest() override { stage_.publish(); }

  explicit SchedulerTest(const EngineConfig& config)
      : config_(config),
        tiny_(config_.max_num_batched_tokens, 32, 8),
        stage_([](RequestId) {}, 64),
        state_(config_, *tiny_.cache, tiny_.source.config.max_seq_len, 0, stage_),
        scheduler_(state_, *tiny_.cache),
        postprocess_(state_, tiny_.cache->block_size(), {}),
        plan_(config_.max_num_batched_tokens, config_.max_num_seqs, tiny_.cache->num_blocks()) {}
  SchedulerTest() : SchedulerTest(make_config()) {}

  static EngineConfig make_config() {
    EngineConfig config;
    config.max_num_seqs = 4;
    config.max_num_batched_tokens = 16;
    return config;
  }

  // A greedy request with a prompt of `num_tokens` tokens.
  Sequence* add(RequestId id, int32_t num_tokens) {
    Request r;
    r.sink = std::make_shared<NoSink>();
    r.max_new_tokens = 8;
    r.sampling.temperature = 0.0f;
    std::vector<int32_t> prompt(static_cast<size_t>(num_tokens));
    for (int32_t i = 0; i < num_tokens; ++i) prompt[static_cast<size_t>(i)] = static_cast<int32_t>(100 * id + i);
    auto seq = std::make_unique<Sequence>(id, std::move(r), std::move(prompt), num_tokens + 8,
                                          tiny_.source.config.vocab_size, *tiny_.source.tokenizer, make_cache_salt(1, ""));
    Sequence* raw = seq.get();
    seq->arrival = state_.next_arrival++;
    state_.insert_waiting(std::move(seq));
    return raw;
  }

  // What a pass would leave: logits row r gives token 7 + r.
  void run_pass() {
    for (size_t row = 0; row < plan_.rows.size(); ++row) plan_.next_tokens[row] = static_cast<int32_t>(7 + row);
    plan_.job.status = Status();
    plan_.job.start = plan_.job.end = Clock::now();
    postprocess_.finish_pass(plan_, /*pass_running=*/false);
  }

  std::vector<int32_t> chunk_sizes() const {
    std::vector<int32_t> sizes;
    for (const Scheduled& s : plan_.scheduled) sizes.push_back(s.num_tokens);
    return sizes;
  }

  EngineConfig config_;
  test::TinyModel tiny_;
  OutputStage stage_;
  EngineState state_;
  Scheduler scheduler_;
  Postprocess postprocess_;
  StepPlan plan_;
};

TEST_F(SchedulerTest, DecodesComeFirstAndPromptsShareWhatBudgetIsLeft) {
  Sequence* a = add(1, 10);
  Sequence* b = add(2, 10);
  Sequence* c = add(3, 10);
  scheduler_.schedule(plan_, /*pass_running=*/false);
  // All three admitted; a's whole prompt, then 6 of b's (no row: its prompt goes on).
  EXPECT_EQ(state_.running.size(), 3u);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{10, 6}));
  EXPECT_EQ(plan_.num_decode_rows, 0u);
  ASSERT_EQ(plan_.row_seqs, (std::vector<Sequence*>{a}));
  EXPECT_EQ(plan_.rows, (std::vector<int32_t>{9}));

  run_pass();
  EXPECT_EQ(a->tokens.back(), 7);
  EXPECT_EQ(a->num_computed, 10);
  EXPECT_EQ(b->num_computed, 6);
  // a decodes first, b finishes its prompt, c gets the 11 tokens left (10).
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{1, 4, 10}));
  EXPECT_EQ(plan_.num_decode_rows, 1u);
  EXPECT_EQ(plan_.row_seqs, (std::vector<Sequence*>{a, b, c}));
  EXPECT_EQ(plan_.tokens[0], 7);  // a's decode feeds its sampled token

  run_pass();
  EXPECT_EQ(a->tokens.back(), 7);
  EXPECT_EQ(b->tokens.back(), 8);
  EXPECT_EQ(c->tokens.back(), 9);
  // Nothing prefills now: every sequence decodes, from the rows kept.
  scheduler_.schedule(plan_, false);
  EXPECT_TRUE(plan_.reused);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(plan_.row_seqs, (std::vector<Sequence*>{a, b, c}));
  EXPECT_EQ(plan_.tokens, (std::vector<int32_t>{7, 8, 9}));
}

TEST_F(SchedulerTest, AdmissionStopsAtTheFirstRequestThatDoesNotFit) {
  // 32 blocks of 8 tokens; each request reserves its whole extent
  // (contiguous): 200 + 8 tokens is 26 blocks, so the second waits and the
  // third, which would fit, waits behind it.
  add(1, 200);
  add(2, 200);
  add(3, 4);
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(state_.running.size(), 1u);
  EXPECT_EQ(state_.waiting.size(), 2u);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{16}));
}

// A pass in flight reads the block tables it was planned with: compaction
// moves blocks beside it by giving the sequences it holds new tables and
// leaving the KV copies to the next pass, instead of waiting for it.
TEST_F(SchedulerTest, CompactionBesideAPassRenewsTheTablesItReads) {
  // Four 56-token prompts (+ 8 new tokens): 8 blocks each, the whole pool.
  Sequence* a = add(1, 56);
  Sequence* b = add(2, 56);
  Sequence* c = add(3, 56);
  Sequence* d = add(4, 56);
  scheduler_.schedule(plan_, false);
  ASSERT_EQ(state_.running.size(), 4u);
  run_pass();
  ASSERT_EQ(b->blocks.table.front(), 8);
  for (Sequence* gone : {a, c}) state_.finish(gone, FinishReason::kAborted, "test", Clock::now());
  state_.reap_finished();  // free: [0, 8) and [16, 24), around b
  Sequence* e = add(5, 120);  // 16 blocks
  // b and d are in a pass still running.
  b->plan_id = d->plan_id = state_.committed_plan + 1;
  const int32_t* b_read = b->blocks.table.data();
  const int32_t* d_read = d->blocks.table.data();
  scheduler_.schedule(plan_, /*pass_running=*/true);
  ASSERT_EQ(e->state, SeqState::kRunning) << "admitted without waiting for the pass";
  ASSERT_EQ(plan_.block_moves.size(), 8u);
  EXPECT_EQ(plan_.block_moves.front().src, 8);
  EXPECT_EQ(plan_.block_moves.front().dst, 0);
  EXPECT_EQ(b->blocks.table, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_NE(b->blocks.table.data(), b_read);
  EXPECT_EQ(std::vector<int32_t>(b_read, b_read + 8), (std::vector<int32_t>{8, 9, 10, 11, 12, 13, 14, 15}))
      << "the running pass's view of b";
  EXPECT_EQ(d->blocks.table.data(), d_read) << "d did not move";
  EXPECT_EQ(e->blocks.table.front(), 8);
  for (const SeqChunk& chunk : plan_.chunks) EXPECT_NE(chunk.block_table.data(), b_read);
}

// Prefill first, with a budget that would take every prompt at once.
class PrefillFirstTest : public SchedulerTest {
 protected:
  explicit PrefillFirstTest(int32_t prefill_first_ms = 60000) : SchedulerTest(config_with(prefill_first_ms)) {}
  static EngineConfig config_with(int32_t prefill_first_ms) {
    EngineConfig config = make_config();
    config.max_num_batched_tokens = 256;
    config.prefill_first_ms = prefill_first_ms;
    return config;
  }
  // Admits and prefills a 10-token prompt: it decodes from then on.
  Sequence* add_decoder(RequestId id) {
    Sequence* seq = add(id, 10);
    scheduler_.schedule(plan_, false);
    run_pass();
    return seq;
  }
};

TEST_F(PrefillFirstTest, PromptsRunAloneWhileOthersDecode) {
  Sequence* a = add_decoder(1);
  Sequence* b = add(2, 130);
  Sequence* c = add(3, 10);
  // b alone: it reaches kPrefillFirstTokens, so c waits; a sits out.
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(state_.running.size(), 3u);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{130}));
  EXPECT_EQ(plan_.num_decode_rows, 0u);
  EXPECT_FALSE(plan_.all_decoders_scheduled);
  run_pass();
  EXPECT_EQ(a->tokens.size(), 11u);  // no token for a in that pass
  // c's prompt alone; a and b (whose first token came) wait.
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(plan_.row_seqs, (std::vector<Sequence*>{c}));
  run_pass();
  // No prompt left: everyone decodes, in admission order.
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(plan_.row_seqs, (std::vector<Sequence*>{a, b, c}));
}

TEST_F(PrefillFirstTest, PromptsShareAPassUpToTheTokenMark) {
  for (RequestId id = 1; id <= 4; ++id) add(id, 50);
  // 50 + 50 < 128 <= 150: three whole prompts; a mixed pass would take all four.
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(state_.running.size(), 4u);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{50, 50, 50}));
}

class PrefillFirstLimitTest : public PrefillFirstTest {
 protected:
  PrefillFirstLimitTest() : PrefillFirstTest(/*prefill_first_ms=*/1) {}
};

TEST_F(PrefillFirstLimitTest, DecodersWaitAtMostTheLimit) {
  Sequence* a = add_decoder(1);
  Sequence* b = add(2, 130);
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{130}));
  run_pass();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // A prompt waits, but a has sat out past the limit: a mixed pass.
  Sequence* c = add(3, 10);
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(plan_.num_decode_rows, 2u);
  EXPECT_EQ(plan_.row_seqs, (std::vector<Sequence*>{a, b, c}));
  EXPECT_TRUE(plan_.all_decoders_scheduled);
  run_pass();
  // The clock starts again: a new prompt runs alone.
  add(4, 10);
  scheduler_.schedule(plan_, false);
  EXPECT_EQ(chunk_sizes(), (std::vector<int32_t>{10}));
}

TEST(CompactionSliceTest, BytesBecomeWholeBlocksWithinThePool) {
  EXPECT_EQ(compaction_blocks_per_step(0, 1024, 64), 0);  // each compaction at once
  EXPECT_EQ(compaction_blocks_per_step(1, 1024, 64), 1);  // less than a block: one, so it ends
  EXPECT_EQ(compaction_blocks_per_step(4096, 1024, 64), 4);
  EXPECT_EQ(compaction_blocks_per_step(5000, 1024, 64), 4);
  EXPECT_EQ(compaction_blocks_per_step(int64_t{1} << 40, 1024, 64), 64);
}

}  // namespace
}  // namespace zl
