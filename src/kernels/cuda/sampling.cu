#include "kernels/cuda/common.cuh"
#include "kernels/cuda/sampling.h"

namespace zl::cuda {
namespace {

constexpr int kThreads = 1024;

// Order-preserving map of a float to uint32 (larger float, larger key).
__device__ __forceinline__ uint32_t order_key(float f) {
  uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The largest key t with f(t) >= target, for f non-increasing in t, f(0) >= target.
template <typename F>
__device__ uint32_t search_threshold(F f, float target) {
  uint32_t answer = 0;
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t candidate = answer | (1u << bit);
    if (f(candidate) >= target) answer = candidate;
  }
  return answer;
}

// Argmax with the lowest id on ties, over the block; NaNs are never chosen
// (0 if the row holds nothing else), as cpu::argmax_f32.
__device__ int32_t block_argmax(const float* z, int32_t n, float* values, int32_t* ids) {
  float best = -INFINITY;
  int32_t best_id = INT32_MAX;
  for (int32_t i = threadIdx.x; i < n; i += kThreads) {  // ascending ids: strict > keeps the lowest on ties
    const float v = z[i];
    if (v > best || (best_id == INT32_MAX && v == v)) best = v, best_id = i;
  }
  values[threadIdx.x] = best;
  ids[threadIdx.x] = best_id;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      const float v = values[threadIdx.x + width];
      const int32_t id = ids[threadIdx.x + width];
      if (v > values[threadIdx.x] || (v == values[threadIdx.x] && id < ids[threadIdx.x])) {
        values[threadIdx.x] = v;
        ids[threadIdx.x] = id;
      }
    }
    __syncthreads();
  }
  return ids[0] == INT32_MAX ? 0 : ids[0];
}

__global__ void __launch_bounds__(kThreads) sample_kernel(SampleArgs a) {
  __shared__ float scratch[32];
  __shared__ float values[kThreads];
  __shared__ int32_t ids[kThreads];
  __shared__ int32_t chosen;
  const int32_t r = blockIdx.x, n = a.vocab_size;
  const SampleParams p = a.params[r];
  if (p.slot < 0) {
    if (threadIdx.x == 0) a.tokens[r] = -1, a.logprobs[r] = 0.0f, a.finish[r] = kSampleRunning;
    return;
  }
  const float* raw = a.logits + int64_t{r} * n;
  float* z = a.work + int64_t{r} * n;
  const int32_t* counts = a.output_counts + int64_t{p.slot} * n;
  const uint8_t* seen = a.prompt_seen + int64_t{p.slot} * n;

  // log-softmax normaliser of the raw row, for the logprob.
  float local_max = -INFINITY;
  for (int32_t i = threadIdx.x; i < n; i += kThreads) local_max = fmaxf(local_max, raw[i]);
  const float raw_max = block_max(local_max, scratch);
  float local_sum = 0.0f;
  for (int32_t i = threadIdx.x; i < n; i += kThreads) local_sum += expf(raw[i] - raw_max);
  const float log_norm = raw_max + logf(block_sum(local_sum, scratch));

  // Penalties (as the CPU: repetition on prompt or output ids, additive on output ids), then temperature.
  const float inv_temperature = p.temperature > 0.0f ? 1.0f / p.temperature : 1.0f;
  for (int32_t i = threadIdx.x; i < n; i += kThreads) {
    float v = raw[i];
    const int32_t count = counts[i];
    if (p.repetition_penalty != 1.0f && (seen[i] || count > 0))
      v = v > 0.0f ? v / p.repetition_penalty : v * p.repetition_penalty;
    if (count > 0) v -= p.presence_penalty + p.frequency_penalty * static_cast<float>(count);
    z[i] = p.temperature > 0.0f ? v * inv_temperature : v;
  }
  __syncthreads();

  if (p.temperature == 0.0f) {
    const int32_t id = block_argmax(z, n, values, ids);
    if (threadIdx.x == 0) chosen = id;
  } else {
    float zmax_local = -INFINITY;
    for (int32_t i = threadIdx.x; i < n; i += kThreads) zmax_local = fmaxf(zmax_local, z[i]);
    const float zmax = block_max(zmax_local, scratch);
    uint32_t key_lo = 0;
    if (p.top_k > 0 && p.top_k < n) {
      key_lo = search_threshold(
          [&](uint32_t t) {
            float c = 0.0f;
            for (int32_t i = threadIdx.x; i < n; i += kThreads) c += order_key(z[i]) >= t ? 1.0f : 0.0f;
            return block_sum(c, scratch);
          },
          static_cast<float>(p.top_k));
    }
    auto mass_at_least = [&](uint32_t t) {
      float s = 0.0f;
      for (int32_t i = threadIdx.x; i < n; i += kThreads)
        if (order_key(z[i]) >= t) s += expf(z[i] - zmax);
      return block_sum(s, scratch);
    };
    if (p.top_p < 1.0f) {
      const float total = mass_at_least(key_lo);
      const uint32_t key_p = search_threshold(mass_at_least, p.top_p * total);
      key_lo = max(key_lo, key_p);
    }
    // Kept mass per thread over a contiguous chunk of ids, for the inverse CDF.
    const int32_t chunk = (n + kThreads - 1) / kThreads;
    const int32_t lo = threadIdx.x * chunk, hi = min(n, lo + chunk);
    float kept = 0.0f;
    for (int32_t i = lo; i < hi; ++i) {
      const float prob = expf(z[i] - zmax);
      if (order_key(z[i]) >= key_lo && prob >= p.min_p) kept += prob;
    }
    values[threadIdx.x] = kept;
    __syncthreads();
    if (threadIdx.x == 0) {
      double total = 0.0;
      int32_t last_chunk = 0;
      for (int t = 0; t < kThreads; ++t) {
        total += values[t];
        if (values[t] > 0.0f) last_chunk = t;
      }
      const uint64_t seed = (uint64_t{p.seed_hi} << 32) | p.seed_lo;
      const uint64_t bits = splitmix64(seed ^ (uint64_t(a.slots[p.slot].num_generated) * 0xd1b54a32d192ed03ull));
      double u = static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0) * total;
      int32_t last_kept = -1, pick = -1;
      // Skip whole chunks, then walk the one u falls in; rounding that runs
      // u past the end picks the last kept id.
      for (int t = 0; t <= last_chunk && pick < 0; ++t) {
        if (values[t] <= 0.0f) continue;
        if (u >= values[t] && t < last_chunk) {
          u -= values[t];
          continue;
        }
        for (int32_t i = t * chunk; i < min(n, (t + 1) * chunk); ++i) {
          const float prob = expf(z[i] - zmax);
          if (order_key(z[i]) < key_lo || prob < p.min_p) continue;
          last_kept = i;
          u -= prob;
          if (u < 0.0) {
            pick = i;
            break;
          }
        }
      }
      chosen = pick >= 0 ? pick : last_kept;
    }
  }
  __syncthreads();
  if (threadIdx.x != 0) return;

  // The token, its raw logprob, and the request's state.
  const int32_t token = chosen;
  const float logprob = raw[token] - log_norm;
  SlotState& state = a.slots[p.slot];
  a.output_counts[int64_t{p.slot} * n + token] += 1;
  state.num_generated += 1;
  int32_t finish = state.finish;
  if (finish == kSampleRunning) {
    bool eos = false;
    for (int32_t e = 0; e < a.num_eos && !p.ignore_eos; ++e) eos = eos || a.eos_ids[e] == token;
    if (eos) {
      finish = kSampleEos;
    } else if (p.max_new_tokens > 0 && state.num_generated >= p.max_new_tokens) {
      finish = kSampleLength;
    } else if (p.min_token_prob > 0.0f && expf(logprob) < p.min_token_prob) {
      finish = kSampleMinProb;
    }
    state.finish = finish;
  }
  a.tokens[r] = token;
  a.logprobs[r] = logprob;
  a.finish[r] = finish;
}

// One block per row: greedy decoding's token without the sampler's other passes.
__global__ void __launch_bounds__(kThreads) argmax_rows_kernel(const float* logits, int32_t vocab_size, int32_t* out) {
  __shared__ float values[kThreads];
  __shared__ int32_t ids[kThreads];
  const int32_t id = block_argmax(logits + int64_t{blockIdx.x} * vocab_size, vocab_size, values, ids);
  if (threadIdx.x == 0) out[blockIdx.x] = id;
}

__global__ void reset_slot_kernel(SampleArgs a, int32_t slot, const int32_t* prompt, int32_t num_prompt) {
  const int64_t base = int64_t{slot} * a.vocab_size;
  uint8_t* seen = const_cast<uint8_t*>(a.prompt_seen) + base;
  for (int32_t i = threadIdx.x; i < a.vocab_size; i += blockDim.x) {
    a.output_counts[base + i] = 0;
    seen[i] = 0;
  }
  __syncthreads();
  for (int32_t i = threadIdx.x; i < num_prompt; i += blockDim.x) {
    const int32_t id = prompt[i];
    if (id >= 0 && id < a.vocab_size) seen[id] = 1;
  }
  if (threadIdx.x == 0) a.slots[slot] = SlotState{};
}

}  // namespace

void sample(const SampleArgs& args, Stream stream) {
  if (args.num_rows == 0) return;
  sample_kernel<<<static_cast<unsigned>(args.num_rows), kThreads, 0, stream>>>(args);
}

void argmax_rows(const float* logits, int32_t num_rows, int32_t vocab_size, int32_t* out, Stream stream) {
  if (num_rows == 0) return;
  argmax_rows_kernel<<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(logits, vocab_size, out);
}

void reset_slot(const SampleArgs& args, int32_t slot, const int32_t* prompt, int32_t num_prompt, Stream stream) {
  reset_slot_kernel<<<1, 1024, 0, stream>>>(args, slot, prompt, num_prompt);
}

}  // namespace zl::cuda
