// After warm-up the engine thread allocates nothing (issue 3: "after warm-up a
// step allocates nothing"). EngineCore runs on this test's thread, as the
// engine thread runs it, with its output stage on a thread of its own, as
// Engine sets it up; a seeded random mix of submits, aborts (in every state),
// stop strings, finishes, preemption (paged, hybrid) and compaction
// (contiguous, under a pool too small for the sequences' extents) runs first
// to warm up, then in a measured window of thousands of steps. Counted: every
// operator new on this thread inside EngineCore's calls (enqueue, step with
// its forward pass, abort, stop_by_string), and every free there. Not counted:
//  - what the submitter builds (Request, Sequence with its token, sampler and
//    output buffers, the event sink): here between EngineCore calls, in
//    Engine on the caller's thread in submit();
//  - event delivery. Engine's output stage delivers a step of up to
//    OutputStage::kInlineRecords records on the engine thread when it is
//    idle, and the detokenizer allocates there (StreamDecoder::push and
//    Tokenizer::decode return strings: 0.7 per step in this mix, whose byte
//    tokens are often partial UTF-8); this test's stage never delivers inline.
// This binary replaces operator new (engine/alloc_counter.h): it holds no other tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>

#include "engine/alloc_counter.h"
#include "engine/engine_core.h"
#include "tiny_model.h"

namespace zl {
namespace {

constexpr int32_t kMaxNumSeqs = 8;
constexpr int32_t kMaxNumWaiting = 16;
constexpr int32_t kNumBlocks = 24;
constexpr int32_t kBlockSize = 8;  // 192 tokens: contiguous extents wait, paged preempts
constexpr int32_t kEos = 257;

struct CountingSink : EventSink {
  std::atomic<int32_t> num_tokens{0};
  std::atomic<int32_t> num_finishes{0};
  void on_token(const TokenEvent&) override {
    test::UncountedScope caller_code;
    num_tokens.fetch_add(1, std::memory_order_relaxed);
  }
  void on_finish(const FinishEvent&) override {
    test::UncountedScope caller_code;
    num_finishes.fetch_add(1, std::memory_order_relaxed);
  }
};

// This thread's allocations and frees inside EngineCore's calls.
struct EngineCounts {
  int64_t allocations = 0;
  int64_t frees = 0;
  int64_t max_allocations_per_call = 0;
  int64_t num_steps = 0;

  template <typename Call>
  void count(Call&& call) {
    const int64_t allocations_before = test::t_num_allocations, frees_before = test::t_num_frees;
    call();
    const int64_t n = test::t_num_allocations - allocations_before;
    allocations += n;
    frees += test::t_num_frees - frees_before;
    max_allocations_per_call = std::max(max_allocations_per_call, n);
  }
};

class Workload {
 public:
  explicit Workload(CachePolicy policy)
      : config_(make_config(policy)),
        tiny_(config_.max_num_batched_tokens, kNumBlocks, kBlockSize),
        pieces_(*tiny_.source.tokenizer),
        stage_([this](RequestId id) { on_stop_string(id); }, EngineCore::output_capacity(config_),
               /*max_inline_records=*/0),
        core_(config_, tiny_.model, *tiny_.cache, {kEos}, &stage_) {
    stage_.start_thread();
    std::mt19937 rng(77);
    for (auto& prefix : prefixes_)
      for (int i = 0; i < 24; ++i) prefix.push_back(3 + static_cast<int32_t>(rng() % 250));
  }

  // One random operation: submit, abort (any id, in any state), or a step.
  void run(int num_ops, EngineCounts& counts) {
    for (int op = 0; op < num_ops; ++op) {
      const int kind = uniform(0, 99);
      if (kind < 22) {
        if (core_.num_waiting() < kMaxNumWaiting / 2) submit(counts);
      } else if (kind < 30) {
        // Mostly recent requests (waiting or running), sometimes finished or unknown ones.
        const RequestId id = static_cast<RequestId>(std::max(1, static_cast<int>(next_id_) - uniform(0, 12)));
        counts.count([&] { core_.abort(id); });
      } else {
        counts.count([&] { core_.step(); });
        counts.num_steps++;
      }
      for (RequestId id : take_stops()) counts.count([&] { core_.stop_by_string(id); });
    }
  }

  void drain() {
    while (core_.has_work()) core_.step();
  }

  EngineCore& core() { return core_; }
  const std::vector<std::shared_ptr<CountingSink>>& sinks() const { return sinks_; }

 private:
  static EngineConfig make_config(CachePolicy policy) {
    EngineConfig config;
    config.max_num_seqs = kMaxNumSeqs;
    config.max_num_waiting = kMaxNumWaiting;
    config.max_num_batched_tokens = 64;
    config.cache_policy = policy;
    return config;
  }

  int uniform(int lo, int hi) { return lo + static_cast<int>(rng_() % static_cast<uint32_t>(hi - lo + 1)); }

  // The submitter's part (not counted), then the engine's enqueue (counted).
  void submit(EngineCounts& counts) {
    auto sink = std::make_shared<CountingSink>();
    Request r;
    r.sink = sink;
    r.max_new_tokens = uniform(1, 40);
    r.sampling.temperature = uniform(0, 1) ? 0.0f : 0.9f;
    r.sampling.has_seed = true;
    r.sampling.seed = rng_();
    r.priority = uniform(0, 2);
    if (uniform(0, 9) == 0) r.stop = {"\x05"};
    if (uniform(0, 19) == 0) r.min_token_prob = 0.01f;
    if (uniform(0, 9) == 0) r.sampling.num_top_logprobs = uniform(1, kMaxTopLogprobs);
    if (uniform(0, 9) == 0) r.ignore_eos = true;
    std::vector<int32_t> prompt = prefixes_[static_cast<size_t>(uniform(0, 3))];
    prompt.resize(static_cast<size_t>(uniform(1, 24)));
    for (int i = uniform(0, 40); i > 0; --i) prompt.push_back(uniform(3, 255));
    const int32_t max_total = std::min<int32_t>(static_cast<int32_t>(prompt.size()) + r.max_new_tokens,
                                                kNumBlocks * kBlockSize);
    auto seq = std::make_unique<Sequence>(next_id_++, std::move(r), std::move(prompt), max_total,
                                          tiny_.source.config.vocab_size, *tiny_.source.tokenizer, salts_[uniform(0, 1)], &pieces_);
    seq->submitted_at = Clock::now();
    sinks_.push_back(std::move(sink));
    counts.count([&] { core_.enqueue(std::move(seq)); });
  }

  // Called on the stage's thread.
  void on_stop_string(RequestId id) {
    test::UncountedScope caller_code;
    std::lock_guard<std::mutex> lock(stops_mutex_);
    stops_.push_back(id);
  }

  std::vector<RequestId> take_stops() {
    std::lock_guard<std::mutex> lock(stops_mutex_);
    return std::exchange(stops_, {});
  }

  EngineConfig config_;
  test::TinyModel tiny_;
  ContinuationPieces pieces_;
  OutputStage stage_;
  EngineCore core_;
  std::mt19937 rng_{2025};
  std::vector<int32_t> prefixes_[4];
  const BlockSignature salts_[2] = {make_cache_salt(1, ""), make_cache_salt(1, "tenant-b")};
  RequestId next_id_ = 1;
  std::vector<std::shared_ptr<CountingSink>> sinks_;
  std::mutex stops_mutex_;
  std::vector<RequestId> stops_;
};

class EngineStepAllocTest : public testing::TestWithParam<CachePolicy> {};

TEST_P(EngineStepAllocTest, EngineThreadAllocatesNothingAfterWarmUp) {
  auto owned = std::make_unique<Workload>(GetParam());
  Workload& workload = *owned;
  EngineCounts warm_up;
  workload.run(1500, warm_up);

  const EngineStats before = workload.core().stats();
  EngineCounts counts;
  workload.run(4000, counts);
  const EngineStats after = workload.core().stats();

  EXPECT_EQ(counts.allocations, 0) << "max " << counts.max_allocations_per_call << " in one call, over "
                                   << counts.num_steps << " steps (warm-up: " << warm_up.allocations << ")";
  // Nor frees: finished sequences go to the output stage to be freed there
  // (1600-2200 frees per window when the engine thread freed them).
  EXPECT_EQ(counts.frees, 0);
  RecordProperty("warm_up_allocations", static_cast<int>(warm_up.allocations));
  // The window did what it claims: many steps and requests, ended every way.
  EXPECT_GT(counts.num_steps, 2000);
  // (Under contiguous 496 and more measured: with overlap scheduling some
  // step() calls only queue a pass.)
  EXPECT_GT(after.num_finished - before.num_finished, 400);
  for (FinishReason reason : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAborted}) {
    const int r = static_cast<int>(reason);
    EXPECT_GT(after.num_finished_by_reason[r] - before.num_finished_by_reason[r], 20) << finish_reason_name(reason);
  }
  if (GetParam() == CachePolicy::kContiguous) {
    EXPECT_GT(after.kv.num_compactions - before.kv.num_compactions, 20);
  } else {  // hybrid falls back to pages rather than compact
    EXPECT_GT(after.num_preemptions - before.num_preemptions, 20);
  }
  EXPECT_GT(after.kv.prefix_hit_tokens, before.kv.prefix_hit_tokens);

  workload.drain();
  std::vector<const SeqBlocks*> live = workload.core().live_blocks();
  EXPECT_TRUE(live.empty());
  Status status = workload.core().pool().check_invariants(live);
  EXPECT_TRUE(status.ok()) << status.message();
  // Exactly one terminal event each, once the output stage has delivered all.
  std::vector<std::shared_ptr<CountingSink>> sinks = workload.sinks();
  owned.reset();
  for (size_t i = 0; i < sinks.size(); ++i) EXPECT_EQ(sinks[i]->num_finishes.load(), 1) << "request " << i + 1;
}

INSTANTIATE_TEST_SUITE_P(Policies, EngineStepAllocTest,
                         testing::Values(CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid),
                         [](const testing::TestParamInfo<CachePolicy>& info) {
                           return std::string(cache_policy_name(info.param));
                         });

}  // namespace
}  // namespace zl
