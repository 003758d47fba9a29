#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kernels/cpu/argmax.h"

namespace zl {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Orders ids by logit, highest first; ties by lower id (as torch.argmax).
struct LogitDescending {
  const float* logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Whether any of the three penalties changes the logits.
bool penalties_on(const SamplingParams& p) {
  return p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
}

// Whether sample() changes the logits before its choice (and keeps the raw row
// for the logprob).
bool modifies_logits(const SamplingParams& p) { return penalties_on(p) || !p.logit_bias.empty(); }

}  // namespace

Status validate_sampling(const SamplingParams& p, int32_t vocab_size) {
  ZL_RETURN_IF_ERROR(check_field(field::kTemperature, p.temperature));
  ZL_RETURN_IF_ERROR(check_field(field::kTopK, p.top_k));
  ZL_RETURN_IF_ERROR(check_field(field::kTopP, p.top_p));
  ZL_RETURN_IF_ERROR(check_field(field::kMinP, p.min_p));
  ZL_RETURN_IF_ERROR(check_field(field::kRepetitionPenalty, p.repetition_penalty));
  ZL_RETURN_IF_ERROR(check_field(field::kPresencePenalty, p.presence_penalty));
  ZL_RETURN_IF_ERROR(check_field(field::kFrequencyPenalty, p.frequency_penalty));
  ZL_RETURN_IF_ERROR(check_field(field::kTopLogprobs, p.num_top_logprobs));
  if (p.num_top_logprobs > vocab_size)
    return invalid_argument("logprobs must be at most the vocabulary size ", vocab_size, ", got ", p.num_top_logprobs);
  return check_logit_bias(p.logit_bias, vocab_size);
}

Status check_logit_bias(std::span<const LogitBias> entries, int32_t vocab_size) {
  if (entries.size() > static_cast<size_t>(vocab_size))
    return invalid_argument("logit_bias has ", entries.size(), " entries, more than the vocabulary's ", vocab_size);
  for (const LogitBias& b : entries) {
    if (b.id < 0 || b.id >= vocab_size)
      return invalid_argument("logit_bias: token id ", b.id, " is outside the vocabulary [0, ", vocab_size, ")");
    ZL_RETURN_IF_ERROR(check_field(field::kLogitBias, b.bias));
  }
  std::vector<int32_t> ids(entries.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = entries[i].id;
  std::sort(ids.begin(), ids.end());
  if (const auto twice = std::adjacent_find(ids.begin(), ids.end()); twice != ids.end())
    return invalid_argument("logit_bias names token id ", *twice, " twice");
  return ok_status();
}

// Only the buffers these parameters use are allocated: each is [vocab_size],
// and greedy decoding without penalties (the common case) needs none, which
// keeps a sequence's state small and a step's memory traffic low.
Sampler::Sampler(const SamplingParams& params, int32_t vocab_size) : params_(params), vocab_size_(vocab_size) {
  const size_t n = static_cast<size_t>(vocab_size);
  if (penalties_on(params_)) {
    output_counts_.assign(n, 0);
    seen_.assign(n, 0);
  }
  if (modifies_logits(params_)) raw_logits_.resize(n);
  if (params.temperature != 0.0f || params.num_top_logprobs > 0) candidates_.resize(n);
  top_.resize(static_cast<size_t>(std::max(params.num_top_logprobs, 0)));
  if (params.temperature != 0.0f) probs_.resize(n);
  uint64_t state = params.has_seed ? params.seed : std::random_device{}();
  for (uint64_t& word : rng_) word = splitmix64(state);
}

void Sampler::set_prompt(std::span<const int32_t> prompt) {
  if (seen_.empty()) return;
  for (int32_t id : prompt)
    if (id >= 0 && id < vocab_size_) seen_[static_cast<size_t>(id)] = 1;
}

uint64_t Sampler::next_random() {
  uint64_t* s = rng_;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

bool Sampler::is_plain_greedy(const SamplingParams& p) {
  return p.temperature == 0.0f && !modifies_logits(p) && !p.return_logprob && p.num_top_logprobs == 0;
}

void Sampler::apply_penalties(float* logits) const {
  const SamplingParams& p = params_;
  bool repetition = p.repetition_penalty != 1.0f;
  bool additive = p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
  for (int32_t id = 0; id < vocab_size_; ++id) {
    size_t i = static_cast<size_t>(id);
    if (repetition && seen_[i]) {
      logits[i] = logits[i] > 0 ? logits[i] / p.repetition_penalty : logits[i] * p.repetition_penalty;
    }
    if (additive && output_counts_[i] > 0) {
      logits[i] -= p.presence_penalty + p.frequency_penalty * static_cast<float>(output_counts_[i]);
    }
  }
}

int32_t Sampler::draw(const float* logits) {
  const SamplingParams& p = params_;
  int32_t n = vocab_size_;
  std::iota(candidates_.begin(), candidates_.end(), 0);
  const auto first = candidates_.begin();
  LogitDescending by_logit{logits};
  if (p.top_k > 0 && p.top_k < n) {
    std::nth_element(first, first + p.top_k, candidates_.end(), by_logit);
    n = p.top_k;
  }
  // Softmax numerators over the candidates at temperature, by token id
  // (probs_[id]), and their sum.
  float max_logit = logits[candidates_[0]];
  for (int32_t i = 1; i < n; ++i) max_logit = std::max(max_logit, logits[candidates_[static_cast<size_t>(i)]]);
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = candidates_[static_cast<size_t>(i)];
    const float prob = std::exp((logits[id] - max_logit) / p.temperature);
    probs_[static_cast<size_t>(id)] = prob;
    total += prob;
  }
  auto prob_at = [&](int32_t i) { return probs_[static_cast<size_t>(candidates_[static_cast<size_t>(i)])]; };
  // top-p: the shortest prefix of the order (logit, then id) whose mass
  // reaches top_p; only that prefix is sorted (top_p_prefix()).
  int32_t keep = n;
  if (p.top_p < 1.0f) {
    keep = top_p_prefix(logits, n, total);
  } else {
    std::sort(first, first + n, by_logit);
  }
  // min-p: relative to the top probability.
  if (p.min_p > 0.0f) {
    const float threshold = p.min_p * prob_at(0);
    while (keep > 1 && prob_at(keep - 1) < threshold) --keep;
  }
  double kept = 0.0;
  for (int32_t i = 0; i < keep; ++i) kept += prob_at(i);
  // A uniform in [0, kept) from 53 random bits.
  double u = static_cast<double>(next_random() >> 11) * (1.0 / 9007199254740992.0) * kept;
  for (int32_t i = 0; i < keep; ++i) {
    u -= prob_at(i);
    if (u < 0.0) return candidates_[static_cast<size_t>(i)];
  }
  return candidates_[static_cast<size_t>(keep - 1)];
}

// Sorts candidates_ [0, n) by logit only as far as the prefix whose mass
// reaches top_p, and returns that prefix's length. Sorting the whole
// vocabulary cost ~2 ms a row at 32,000 tokens; a model's distribution
// usually holds top_p in its first few dozen tokens, so the prefix is
// selected (nth_element) and sorted in rounds of 8x, from 64.
int32_t Sampler::top_p_prefix(const float* logits, int32_t n, double total) {
  const auto first = candidates_.begin();
  LogitDescending by_logit{logits};
  double cumulative = 0.0;
  int32_t sorted = 0;
  for (int32_t k = std::min(n, 64);; k = static_cast<int32_t>(std::min<int64_t>(n, int64_t{k} * 8))) {
    if (k < n) std::nth_element(first + sorted, first + k, first + n, by_logit);
    std::sort(first + sorted, first + k, by_logit);
    for (; sorted < k; ++sorted) {
      cumulative += probs_[static_cast<size_t>(candidates_[static_cast<size_t>(sorted)])] / total;
      if (cumulative >= params_.top_p) return sorted + 1;
    }
    if (k == n) return n;
  }
}

SampleResult Sampler::sample(float* logits) {
  SampleResult result;
  // The raw log-softmax normaliser (one exp per vocabulary entry) only when
  // logprobs are wanted: for greedy decoding it would be most of the cost.
  const bool want_logprobs = params_.return_logprob || params_.num_top_logprobs > 0;
  float log_norm = 0.0f;
  if (want_logprobs) {
    float max_logit = *std::max_element(logits, logits + vocab_size_);
    double sum = 0.0;
    for (int32_t i = 0; i < vocab_size_; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
    log_norm = max_logit + static_cast<float>(std::log(sum));
  }
  if (params_.num_top_logprobs > 0) {
    std::iota(candidates_.begin(), candidates_.end(), 0);
    std::partial_sort(candidates_.begin(), candidates_.begin() + params_.num_top_logprobs, candidates_.end(),
                      LogitDescending{logits});
    for (int32_t i = 0; i < params_.num_top_logprobs; ++i) {
      int32_t id = candidates_[static_cast<size_t>(i)];
      top_[static_cast<size_t>(i)] = {id, logits[id] - log_norm};
    }
    result.top = top_;
  }
  // Penalties and biases change logits in place; keep the raw row for the
  // logprob (vLLM's default: the model's own distribution). The mask only
  // sets forbidden tokens' logits, which the logprob never reads.
  const float* raw = logits;
  if (modifies_logits(params_)) {
    std::copy(logits, logits + vocab_size_, raw_logits_.begin());
    raw = raw_logits_.data();
    if (penalties_on(params_)) apply_penalties(logits);
    for (const LogitBias& b : params_.logit_bias) logits[b.id] += b.bias;
  }
  if (grammar_) grammar_->apply_mask(logits);
  if (params_.temperature == 0.0f) {
    result.token = cpu::argmax_f32(logits, vocab_size_);
  } else {
    result.token = draw(logits);
  }
  if (want_logprobs) result.logprob = raw[result.token] - log_norm;
  if (!seen_.empty()) {
    output_counts_[static_cast<size_t>(result.token)] += 1;
    seen_[static_cast<size_t>(result.token)] = 1;
  }
  if (grammar_) result.grammar = grammar_->accept(result.token);
  return result;
}

}  // namespace zl
