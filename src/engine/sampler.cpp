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
    raw_logits_.resize(n);
  }
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
  return p.temperature == 0.0f && !penalties_on(p) && !p.return_logprob && p.num_top_logprobs == 0;
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
  LogitDescending by_logit{logits};
  if (p.top_k > 0 && p.top_k < n) {
    std::nth_element(candidates_.begin(), candidates_.begin() + p.top_k, candidates_.end(), by_logit);
    n = p.top_k;
  }
  std::sort(candidates_.begin(), candidates_.begin() + n, by_logit);
  // Softmax over the candidates, at temperature, from the largest logit down.
  float max_logit = logits[candidates_[0]];
  double total = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    float prob = std::exp((logits[candidates_[static_cast<size_t>(i)]] - max_logit) / p.temperature);
    probs_[static_cast<size_t>(i)] = prob;
    total += prob;
  }
  // top-p: the shortest prefix whose mass reaches top_p; min-p: relative to the top.
  int32_t keep = n;
  if (p.top_p < 1.0f) {
    double cumulative = 0.0;
    for (int32_t i = 0; i < n; ++i) {
      cumulative += probs_[static_cast<size_t>(i)] / total;
      if (cumulative >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    float threshold = p.min_p * probs_[0];
    while (keep > 1 && probs_[static_cast<size_t>(keep - 1)] < threshold) --keep;
  }
  double kept = 0.0;
  for (int32_t i = 0; i < keep; ++i) kept += probs_[static_cast<size_t>(i)];
  // A uniform in [0, kept) from 53 random bits.
  double u = static_cast<double>(next_random() >> 11) * (1.0 / 9007199254740992.0) * kept;
  for (int32_t i = 0; i < keep; ++i) {
    u -= probs_[static_cast<size_t>(i)];
    if (u < 0.0) return candidates_[static_cast<size_t>(i)];
  }
  return candidates_[static_cast<size_t>(keep - 1)];
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
  // Penalties change logits in place; keep the raw row for the logprob.
  const float* raw = logits;
  if (penalties_on(params_)) {
    std::copy(logits, logits + vocab_size_, raw_logits_.begin());
    raw = raw_logits_.data();
    apply_penalties(logits);
  }
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
  return result;
}

}  // namespace zl
