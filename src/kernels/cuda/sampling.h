// Sampling and stop checks on the device, so a decode step ends with token
// ids, logprobs and each request's state already computed: the host copies
// back a few ints per row instead of [rows, vocab] logits.
//
// Per row (one block of 1024 threads), in the CPU Sampler's order
// (engine/sampler.h): logprob normaliser of the raw logits; repetition,
// presence and frequency penalties; greedy = argmax (lowest id on ties);
// otherwise logits / temperature, then top-k, top-p and min-p as thresholds
// on the order-preserving integer image of the logits (found by a bitwise
// search with block reductions, no sort), and a draw by inverse CDF in id
// order. The draw's uniform is a counter-based hash of (seed, tokens
// generated so far), so replaying a captured graph advances it and the same
// seed gives the same tokens. Ties at a top-k / top-p threshold keep every
// tied id (the CPU keeps the lower ids), a difference of measure zero on
// real logits.
//
// Stop checks after the draw write each request's slot: eos ids (unless
// ignored), the length limit, and min_token_prob on the raw probability.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"

namespace zl::cuda {

enum SampleFinish : int32_t { kSampleRunning = 0, kSampleEos = 1, kSampleLength = 2, kSampleMinProb = 3 };

// One per logits row; plain data, copied to the device with the step's metadata.
struct SampleParams {
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float min_token_prob = 0.0f;
  int32_t top_k = 0;           // <= 0: off
  int32_t slot = -1;           // the request's slot; < 0: padding row, skipped
  int32_t max_new_tokens = 0;  // stop after this many generated tokens; 0: no limit
  int32_t ignore_eos = 0;
  uint32_t seed_lo = 0, seed_hi = 0;
};

// A request's state on the device, [max_slots].
struct SlotState {
  int32_t num_generated = 0;
  int32_t finish = kSampleRunning;  // SampleFinish, sticky once set
};

struct SampleArgs {
  const float* logits = nullptr;         // [num_rows, vocab_size], raw
  float* work = nullptr;                 // [num_rows, vocab_size] scratch
  const SampleParams* params = nullptr;  // [num_rows]
  int32_t* output_counts = nullptr;      // [max_slots, vocab_size] times each id was generated
  const uint8_t* prompt_seen = nullptr;  // [max_slots, vocab_size] 1 if in the prompt
  SlotState* slots = nullptr;            // [max_slots]
  const int32_t* eos_ids = nullptr;      // [num_eos]
  int32_t num_eos = 0;
  int32_t* tokens = nullptr;             // [num_rows] out; -1 for padding rows
  float* logprobs = nullptr;             // [num_rows] out: log p(token) under the raw logits
  int32_t* finish = nullptr;             // [num_rows] out: the slot's SampleFinish after this token
  int32_t num_rows = 0;
  int32_t vocab_size = 0;
};

void sample(const SampleArgs& args, Stream stream);

// Greedy decoding alone: out[r] = the index of row r's largest logit, the
// lowest on ties, NaNs never chosen (cpu::argmax_f32's rule).
// logits: [num_rows, vocab_size]; out: [num_rows].
void argmax_rows(const float* logits, int32_t num_rows, int32_t vocab_size, int32_t* out, Stream stream);

// Starts a request in `slot`: zero counts and state, mark the prompt's ids
// (prompt: [num_prompt] on the device) for the repetition penalty.
void reset_slot(const SampleArgs& args, int32_t slot, const int32_t* prompt, int32_t num_prompt, Stream stream);

}  // namespace zl::cuda
