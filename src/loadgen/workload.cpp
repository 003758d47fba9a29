#include "loadgen/workload.h"

#include <array>
#include <cmath>
#include <random>

namespace zl::loadgen {
namespace {

// Syllables that random words are built from: pronounceable, ASCII, and
// short enough that most BPE vocabularies keep a word to a token or two.
constexpr std::array<const char*, 24> kSyllables = {"ka", "lo", "mi", "ren", "to", "sa", "vel", "dor",
                                                     "an", "qui", "be", "fu",  "zo", "tar", "ne", "pi",
                                                     "gra", "so", "lin", "me", "o",  "ru",  "cha", "el"};

std::string random_word(std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, kSyllables.size() - 1);
  std::uniform_int_distribution<int> count(1, 2);
  std::string word;
  for (int i = count(rng); i > 0; --i) word += kSyllables[pick(rng)];
  return word;
}

int32_t draw_len(std::mt19937_64& rng, int32_t len, double ratio) {
  int32_t lo = static_cast<int32_t>(std::floor(len * (1.0 - ratio)));
  int32_t hi = static_cast<int32_t>(std::ceil(len * (1.0 + ratio)));
  if (hi <= lo) return len;
  return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
}

void append_random(const WorkloadConfig& c, std::mt19937_64& rng, int32_t n, BenchRequest& r) {
  if (c.prompt_kind == PromptKind::kTokens) {
    std::uniform_int_distribution<int32_t> id(c.token_id_min, c.token_id_max - 1);
    for (int32_t i = 0; i < n; ++i) r.prompt_ids.push_back(id(rng));
  } else {
    for (int32_t i = 0; i < n; ++i) {
      if (!r.prompt_text.empty()) r.prompt_text += ' ';
      r.prompt_text += random_word(rng);
    }
  }
  r.prompt_len += n;
}

}  // namespace

std::string validate(const WorkloadConfig& c) {
  if (c.num_prompts < 1) return "--num-prompts must be at least 1";
  if (c.input_len < 1) return "--random-input-len must be at least 1";
  if (c.output_len < 1) return "--random-output-len must be at least 1";
  if (!(c.range_ratio >= 0 && c.range_ratio < 1)) return "--random-range-ratio must be in [0, 1)";
  if (c.prefix_len < 0) return "--prefix-len must not be negative";
  if (c.token_id_min < 0 || c.token_id_max <= c.token_id_min) return "--token-id-range must be LO:HI with 0 <= LO < HI";
  return "";
}

std::vector<BenchRequest> make_requests(const WorkloadConfig& c) {
  std::mt19937_64 rng(c.seed);
  BenchRequest prefix;
  append_random(c, rng, c.prefix_len, prefix);
  std::vector<BenchRequest> requests;
  requests.reserve(c.num_prompts);
  for (int32_t i = 0; i < c.num_prompts; ++i) {
    BenchRequest r = prefix;
    append_random(c, rng, draw_len(rng, c.input_len, c.range_ratio), r);
    r.output_len = std::max(1, draw_len(rng, c.output_len, c.range_ratio));
    requests.push_back(std::move(r));
  }
  return requests;
}

std::vector<double> poisson_arrivals(int32_t n, double rate, uint64_t seed) {
  std::vector<double> times(n, 0.0);
  if (std::isinf(rate)) return times;
  // A stream apart from the prompts' so that changing the rate never changes the prompts.
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::exponential_distribution<double> gap(rate);
  double t = 0;
  for (double& time : times) time = (t += gap(rng));
  return times;
}

}  // namespace zl::loadgen
