#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

namespace zl {
namespace {

std::vector<float> logits_of(std::initializer_list<float> values) { return std::vector<float>(values); }

TEST(SamplerTest, GreedyTakesArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.return_logprob = true;
  Sampler s(p, 4);
  auto logits = logits_of({1.0f, 3.0f, 3.0f, -1.0f});
  SampleResult r = s.sample(logits.data());
  EXPECT_EQ(r.token, 1);
  double norm = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(-1.0));
  EXPECT_NEAR(r.logprob, 3.0 - norm, 1e-5);
}

TEST(SamplerTest, SameSeedSameTokens) {
  SamplingParams p;
  p.has_seed = true;
  p.seed = 42;
  Sampler a(p, 8), b(p, 8);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> la(8, 0.0f), lb(8, 0.0f);
    EXPECT_EQ(a.sample(la.data()).token, b.sample(lb.data()).token);
  }
}

TEST(SamplerTest, UniformLogitsCoverTheVocabulary) {
  SamplingParams p;
  p.has_seed = true;
  p.seed = 7;
  Sampler s(p, 4);
  std::map<int32_t, int> counts;
  for (int i = 0; i < 4000; ++i) {
    std::vector<float> l(4, 0.0f);
    counts[s.sample(l.data()).token]++;
  }
  ASSERT_EQ(counts.size(), 4u);
  for (auto& [id, n] : counts) EXPECT_NEAR(n, 1000, 150) << "id " << id;
}

TEST(SamplerTest, TopKAndTopPAndMinPRestrictCandidates) {
  auto run = [](SamplingParams p) {
    p.has_seed = true;
    p.seed = 1;
    Sampler s(p, 5);
    std::map<int32_t, int> seen;
    for (int i = 0; i < 500; ++i) {
      auto l = logits_of({2.0f, 1.9f, 1.0f, 0.0f, -5.0f});
      seen[s.sample(l.data()).token]++;
    }
    return seen;
  };
  SamplingParams top_k;
  top_k.top_k = 2;
  auto seen = run(top_k);
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen.count(0) && seen.count(1));

  SamplingParams top_p;
  top_p.top_p = 0.3f;  // p(0) ≈ 0.43 alone reaches 0.3
  seen = run(top_p);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen.count(0));

  SamplingParams min_p;
  min_p.min_p = 0.5f;  // keeps ids with p >= 0.5 p(0): 0 and 1 (e^-0.1), not 2 (e^-1)
  seen = run(min_p);
  EXPECT_EQ(seen.size(), 2u);
}

// top-p over a large vocabulary sorts only the prefix it needs, in rounds
// (Sampler::top_p_prefix): whether the set is a few tokens (peaked logits)
// or most of the vocabulary (flat ones, past several rounds), every draw is
// in the set a full sort gives, and each token of a small set comes about as
// often as its renormalised probability says.
TEST(SamplerTest, TopPDrawsFromTheSetAFullSortGives) {
  constexpr int32_t kVocab = 2000;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const float spread : {8.0f, 0.5f}) {  // peaked, flat
    std::vector<float> logits(kVocab);
    for (float& l : logits) l = spread * normal(rng);
    for (const float top_p : {0.5f, 0.9f, 0.99f}) {
      SCOPED_TRACE(testing::Message() << "spread " << spread << " top_p " << top_p);
      SamplingParams p;
      p.temperature = 0.7f;
      p.top_p = top_p;
      p.has_seed = true;
      p.seed = 9;
      // The reference: every id sorted, softmax at temperature, the shortest prefix reaching top_p.
      std::vector<int32_t> order(kVocab);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
      });
      std::vector<double> prob(kVocab);
      double total = 0.0;
      for (int32_t id = 0; id < kVocab; ++id) total += prob[id] = std::exp((logits[id] - logits[order[0]]) / 0.7);
      std::map<int32_t, double> set;  // id -> renormalised probability
      double cumulative = 0.0, mass = 0.0;
      for (int32_t id : order) {
        set[id] = prob[id];
        mass += prob[id];
        if ((cumulative += prob[id] / total) >= top_p) break;
      }
      Sampler sampler(p, kVocab);
      constexpr int kDraws = 1500;
      std::map<int32_t, int> seen;
      for (int i = 0; i < kDraws; ++i) {
        std::vector<float> row = logits;
        seen[sampler.sample(row.data()).token]++;
      }
      for (const auto& [id, count] : seen) ASSERT_TRUE(set.count(id)) << "token " << id << " is outside the top-p set";
      if (set.size() <= 20) {
        for (const auto& [id, q] : set) {
          const double expected = kDraws * q / mass;
          if (expected >= 50) {
            EXPECT_NEAR(seen[id], expected, 5 * std::sqrt(expected)) << "token " << id;
          }
        }
      }
      RecordProperty(testing::PrintToString(spread) + "_" + testing::PrintToString(top_p), static_cast<int>(set.size()));
    }
  }
}

TEST(SamplerTest, RepetitionPenaltyChangesGreedyChoice) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  p.return_logprob = true;
  Sampler s(p, 3);
  std::vector<int32_t> prompt = {0};
  s.set_prompt(prompt);
  auto l = logits_of({2.0f, 1.5f, 0.0f});  // 2.0 / 2 = 1.0 < 1.5
  SampleResult r = s.sample(l.data());
  EXPECT_EQ(r.token, 1);
  // The logprob is of the raw distribution, not the penalised one.
  double norm = std::log(std::exp(2.0) + std::exp(1.5) + 1.0);
  EXPECT_NEAR(r.logprob, 1.5 - norm, 1e-5);
}

TEST(SamplerTest, LogitBiasMovesTheChoiceButNotTheLogprob) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.return_logprob = true;
  p.logit_bias = {{0, -100.0f}, {2, 1.0f}};
  EXPECT_FALSE(Sampler::is_plain_greedy(p));
  Sampler s(p, 3);
  auto l = logits_of({2.0f, 1.5f, 1.0f});  // 2 - 100 and 1 + 1 = 2 > 1.5
  SampleResult r = s.sample(l.data());
  EXPECT_EQ(r.token, 2);
  double norm = std::log(std::exp(2.0) + std::exp(1.5) + std::exp(1.0));
  EXPECT_NEAR(r.logprob, 1.0 - norm, 1e-5);  // of the model's distribution
  // Sampled: a token biased by -100 is never drawn.
  p.temperature = 1.0f;
  p.has_seed = true;
  p.logit_bias = {{1, -100.0f}};
  Sampler hot(p, 3);
  for (int i = 0; i < 200; ++i) {
    auto row = logits_of({0.0f, 5.0f, 0.0f});
    EXPECT_NE(hot.sample(row.data()).token, 1);
  }
}

TEST(SamplerTest, PresenceAndFrequencyPenaliseOutputTokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.frequency_penalty = 1.0f;
  Sampler s(p, 2);
  auto l1 = logits_of({1.0f, 0.5f});
  EXPECT_EQ(s.sample(l1.data()).token, 0);
  auto l2 = logits_of({1.0f, 0.5f});  // 1.0 - 1 = 0 < 0.5
  EXPECT_EQ(s.sample(l2.data()).token, 1);
}

TEST(SamplerTest, TopLogprobsAreSortedAndNormalised) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.num_top_logprobs = 2;
  Sampler s(p, 3);
  auto l = logits_of({0.0f, 2.0f, 1.0f});
  SampleResult r = s.sample(l.data());
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].id, 1);
  EXPECT_EQ(r.top[1].id, 2);
  double norm = std::log(1.0 + std::exp(2.0) + std::exp(1.0));
  EXPECT_NEAR(r.top[1].logprob, 1.0 - norm, 1e-5);
}

TEST(SamplerTest, ValidationNamesTheField) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    SamplingParams p;
    const char* field;
  };
  std::vector<Case> cases;
  SamplingParams p;
  p.temperature = nan; cases.push_back({p, "temperature"}); p = {};
  p.temperature = -1; cases.push_back({p, "temperature"}); p = {};
  p.top_p = 0; cases.push_back({p, "top_p"}); p = {};
  p.top_p = nan; cases.push_back({p, "top_p"}); p = {};
  p.min_p = 1.5; cases.push_back({p, "min_p"}); p = {};
  p.top_k = -2; cases.push_back({p, "top_k"}); p = {};
  p.repetition_penalty = 0; cases.push_back({p, "repetition_penalty"}); p = {};
  p.presence_penalty = nan; cases.push_back({p, "presence_penalty"}); p = {};
  p.frequency_penalty = 3; cases.push_back({p, "frequency_penalty"}); p = {};
  p.num_top_logprobs = 21; cases.push_back({p, "logprobs"}); p = {};
  p.logit_bias = {{100, 1.0f}}; cases.push_back({p, "logit_bias"}); p = {};
  p.logit_bias = {{-1, 1.0f}}; cases.push_back({p, "logit_bias"}); p = {};
  p.logit_bias = {{5, nan}}; cases.push_back({p, "logit_bias"}); p = {};
  p.logit_bias = {{5, 101.0f}}; cases.push_back({p, "logit_bias"}); p = {};
  p.logit_bias = {{7, 1.0f}, {5, 2.0f}, {7, -1.0f}}; cases.push_back({p, "logit_bias"}); p = {};  // 7 twice
  for (const Case& c : cases) {
    Status s = validate_sampling(c.p, 100);
    EXPECT_FALSE(s.ok()) << c.field;
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.message();
  }
  EXPECT_TRUE(validate_sampling(SamplingParams{}, 100).ok());
}

}  // namespace
}  // namespace zl
