// Workload generation: seeded, lengths as vLLM's random dataset draws them,
// a shared prefix, and Poisson arrival times.
#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <sstream>

namespace zl::loadgen {
namespace {

TEST(PoissonArrivals, ExponentialGapsAtTheRate) {
  const double rate = 4.0;
  std::vector<double> t = poisson_arrivals(20000, rate, 7);
  ASSERT_EQ(t.size(), 20000u);
  EXPECT_GT(t[0], 0.0);  // the first request waits a gap too, as vLLM's
  std::vector<double> gaps(t.size());
  std::adjacent_difference(t.begin(), t.end(), gaps.begin());
  for (double g : gaps) ASSERT_GT(g, 0.0);
  double mean = t.back() / static_cast<double>(t.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  double cv = std::sqrt(var / static_cast<double>(gaps.size())) / mean;
  EXPECT_NEAR(mean, 1.0 / rate, 0.02 / rate);  // 20000 gaps: the mean is within 1% (3 sigma 2%)
  EXPECT_NEAR(cv, 1.0, 0.05);                   // exponential: std == mean
}

TEST(PoissonArrivals, SeededAndInfiniteRateSendsAllAtOnce) {
  EXPECT_EQ(poisson_arrivals(50, 2.0, 1), poisson_arrivals(50, 2.0, 1));
  EXPECT_NE(poisson_arrivals(50, 2.0, 1), poisson_arrivals(50, 2.0, 2));
  EXPECT_EQ(poisson_arrivals(5, INFINITY, 1), std::vector<double>(5, 0.0));
}

TEST(MakeRequests, FixedLengthsAndIdRange) {
  WorkloadConfig c;
  c.num_prompts = 20;
  c.input_len = 33;
  c.output_len = 7;
  c.token_id_min = 10;
  c.token_id_max = 20;
  for (const BenchRequest& r : make_requests(c)) {
    ASSERT_EQ(r.prompt_ids.size(), 33u);
    EXPECT_EQ(r.prompt_len, 33);
    EXPECT_EQ(r.output_len, 7);
    for (int32_t id : r.prompt_ids) ASSERT_TRUE(id >= 10 && id < 20) << id;
  }
}

TEST(MakeRequests, RangeRatioSpreadsLengthsWithinBounds) {
  WorkloadConfig c;
  c.num_prompts = 200;
  c.input_len = 100;
  c.output_len = 40;
  c.range_ratio = 0.5;
  std::vector<BenchRequest> rs = make_requests(c);
  int32_t min_in = 1 << 30, max_in = 0;
  for (const BenchRequest& r : rs) {
    min_in = std::min(min_in, r.prompt_len);
    max_in = std::max(max_in, r.prompt_len);
    ASSERT_GE(r.output_len, 20);
    ASSERT_LE(r.output_len, 60);
  }
  EXPECT_GE(min_in, 50);
  EXPECT_LE(max_in, 150);
  EXPECT_GT(max_in - min_in, 50);  // 200 uniform draws over [50, 150] spread
}

TEST(MakeRequests, SharedPrefixAndSeed) {
  WorkloadConfig c;
  c.num_prompts = 5;
  c.input_len = 8;
  c.prefix_len = 16;
  c.seed = 3;
  std::vector<BenchRequest> rs = make_requests(c);
  for (const BenchRequest& r : rs) {
    ASSERT_EQ(r.prompt_len, 24);
    EXPECT_TRUE(std::equal(r.prompt_ids.begin(), r.prompt_ids.begin() + 16, rs[0].prompt_ids.begin()));
  }
  EXPECT_NE(rs[0].prompt_ids, rs[1].prompt_ids);  // the suffixes differ
  EXPECT_EQ(make_requests(c)[4].prompt_ids, rs[4].prompt_ids);
  c.seed = 4;
  EXPECT_NE(make_requests(c)[4].prompt_ids, rs[4].prompt_ids);
}

TEST(MakeRequests, WordsPromptsHaveOneWordPerUnit) {
  WorkloadConfig c;
  c.num_prompts = 3;
  c.input_len = 12;
  c.prefix_len = 4;
  c.prompt_kind = PromptKind::kWords;
  for (const BenchRequest& r : make_requests(c)) {
    EXPECT_TRUE(r.prompt_ids.empty());
    std::istringstream words(r.prompt_text);
    int n = 0;
    for (std::string w; words >> w;) ++n;
    EXPECT_EQ(n, 16) << r.prompt_text;
  }
}

TEST(Validate, NamesTheFlag) {
  WorkloadConfig c;
  EXPECT_EQ(validate(c), "");
  c.range_ratio = 1.0;
  EXPECT_NE(validate(c).find("--random-range-ratio"), std::string::npos);
  c = WorkloadConfig{};
  c.token_id_max = c.token_id_min;
  EXPECT_NE(validate(c).find("--token-id-range"), std::string::npos);
  c = WorkloadConfig{};
  c.num_prompts = 0;
  EXPECT_NE(validate(c).find("--num-prompts"), std::string::npos);
}

}  // namespace
}  // namespace zl::loadgen
