// The statistics of `zerolayer bench` against values worked out by hand with
// vllm bench serve's definitions (numpy's linear-interpolation percentiles).
#include "loadgen/bench_stats.h"

#include <gtest/gtest.h>

#include "loadgen/report.h"

namespace zl::loadgen {
namespace {

TEST(Percentile, InterpolatesLinearlyAsNumpy) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 95), 3.85);       // rank 2.85
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);        // sorts first
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 99), 49.6);
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 0), 10);
  EXPECT_DOUBLE_EQ(percentile({10, 20, 30, 40, 50}, 100), 50);
  EXPECT_DOUBLE_EQ(percentile({5}, 99), 5);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(Distribution, MeanMedianPopulationStdInMs) {
  Distribution d = summarize_seconds({0.001, 0.003}, {99});
  EXPECT_DOUBLE_EQ(d.mean_ms, 2.0);
  EXPECT_DOUBLE_EQ(d.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(d.std_ms, 1.0);
  ASSERT_EQ(d.percentiles_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(d.percentiles_ms[0].second, 2.98);
}

std::vector<RequestResult> three_results() {
  RequestResult a;  // 5 tokens: TPOT (0.5 - 0.1) / 4 = 0.1 s
  a.success = true;
  a.prompt_tokens = 10;
  a.output_tokens = 5;
  a.ttft_s = 0.1;
  a.e2e_s = 0.5;
  a.itl_s = {0.1, 0.1, 0.1, 0.1};
  a.queue_s = 0.0005;
  RequestResult b;  // 1 token: no TPOT
  b.success = true;
  b.prompt_tokens = 20;
  b.output_tokens = 1;
  b.ttft_s = 0.2;
  b.e2e_s = 0.2;
  b.queue_s = 0.010;
  RequestResult c;
  c.error = "HTTP 503: busy";
  return {a, b, c};
}

TEST(SummarizeRun, CountsThroughputsAndVllmDefinitions) {
  RunSummary s = summarize_run(three_results(), 2.0, Slo{}, {50, 99}, 1.0);
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.first_errors, std::vector<std::string>{"HTTP 503: busy"});
  EXPECT_EQ(s.total_input_tokens, 30);
  EXPECT_EQ(s.total_output_tokens, 6);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 18.0);
  EXPECT_DOUBLE_EQ(s.request_goodput, 0.0);  // no SLO given
  EXPECT_NEAR(s.ttft.mean_ms, 150.0, 1e-9);
  EXPECT_NEAR(s.tpot.mean_ms, 100.0, 1e-9);  // the 1-token request is left out
  EXPECT_NEAR(s.itl.mean_ms, 100.0, 1e-9);
  EXPECT_NEAR(s.e2el.percentiles_ms[1].second, 497.0, 1e-9);  // 200 + 0.99 * 300
  ASSERT_TRUE(s.queued_fraction.has_value());
  EXPECT_DOUBLE_EQ(*s.queued_fraction, 0.5);  // 10 ms > 1 ms, 0.5 ms is not
}

TEST(SummarizeRun, GoodputCountsRequestsMeetingEverySlo) {
  Slo ttft;
  ttft.ttft_ms = 150;
  EXPECT_DOUBLE_EQ(summarize_run(three_results(), 2.0, ttft, {}, 1.0).request_goodput, 0.5);
  Slo tpot;
  tpot.tpot_ms = 50;  // the 5-token request's 100 ms fails; a 1-token request has TPOT 0
  EXPECT_DOUBLE_EQ(summarize_run(three_results(), 2.0, tpot, {}, 1.0).request_goodput, 0.5);
  Slo both = ttft;
  both.tpot_ms = 50;
  EXPECT_DOUBLE_EQ(summarize_run(three_results(), 2.0, both, {}, 1.0).request_goodput, 0.0);
}

TEST(SummarizeRun, QueuedIsUnknownWithoutServerQueueTimes) {
  std::vector<RequestResult> results = three_results();
  for (RequestResult& r : results) r.queue_s.reset();
  EXPECT_FALSE(summarize_run(results, 1.0, Slo{}, {}, 1.0).queued_fraction.has_value());
}

TEST(ParseSlo, ReadsItemsAndNamesBadOnes) {
  Slo slo;
  std::string error;
  ASSERT_TRUE(parse_slo({"ttft:500", "tpot:50", "e2el:2000"}, &slo, &error)) << error;
  EXPECT_EQ(slo.ttft_ms, 500);
  EXPECT_EQ(slo.tpot_ms, 50);
  EXPECT_EQ(slo.e2el_ms, 2000);
  for (const char* bad : {"ttft", "itl:5", "ttft:-1", "ttft:abc", "ttft:5ms"}) {
    EXPECT_FALSE(parse_slo({bad}, &slo, &error)) << bad;
    EXPECT_NE(error.find(bad), std::string::npos) << error;
  }
}

TEST(DetailJson, ListsEachRequestInOrder) {
  RequestResult a;
  a.success = true;
  a.prompt_tokens = 7;
  a.output_tokens = 3;
  a.ttft_s = 0.25;
  a.e2e_s = 0.75;
  a.itl_s = {0.2, 0.3};
  a.start_s = 1.5;
  RequestResult b;
  b.error = "HTTP 503";
  const nlohmann::json d = detail_json({a, b}, 42);
  EXPECT_EQ(d["start_unix_ns"], 42);
  EXPECT_EQ(d["input_lens"], nlohmann::json({7, 0}));
  EXPECT_EQ(d["output_lens"], nlohmann::json({3, 0}));
  EXPECT_EQ(d["ttfts"], nlohmann::json({0.25, 0.0}));
  EXPECT_EQ(d["e2els"], nlohmann::json({0.75, 0.0}));
  EXPECT_EQ(d["itls"][0], nlohmann::json({0.2, 0.3}));
  EXPECT_EQ(d["start_times"], nlohmann::json({1.5, 0.0}));
  EXPECT_EQ(d["errors"], nlohmann::json({"", "HTTP 503"}));
}

}  // namespace
}  // namespace zl::loadgen
