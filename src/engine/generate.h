// One request, start to finish, on one sequence: prefill the prompt in
// chunks, then decode token by token until an eos id, a stop string or
// max_new_tokens. This is the serial path `zerolayer generate` uses; the
// engine loop (continuous batching) drives the same forward call and sampler.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/sampler.h"
#include "model/kv_cache.h"
#include "model/llama.h"
#include "tokenizer/tokenizer.h"

namespace zl {

enum class FinishReason { kStop, kLength };
const char* finish_reason_name(FinishReason reason);

struct GenerateOptions {
  int32_t max_new_tokens = 256;
  std::vector<std::string> stop;     // stop strings, not included in the output
  std::vector<int32_t> eos_ids;      // any of them ends generation (not emitted)
  bool ignore_eos = false;
  SamplingParams sampling;
};

struct GenerateResult {
  std::vector<int32_t> output_ids;   // sampled ids, eos excluded
  std::vector<SampleResult> samples; // one per sampled id (logprobs)
  std::string text;                  // the streamed text, stop string excluded
  FinishReason finish = FinishReason::kLength;
  int32_t num_prompt_tokens = 0;
  double time_to_first_token_s = 0;  // from the call to the first sampled token
  double total_s = 0;
};

// on_text receives each piece of text as soon as it is safe to show (whole
// UTF-8 characters, never part of a stop string). The cache must hold
// prompt + max_new_tokens positions in its first blocks.
StatusOr<GenerateResult> generate(LlamaModel& model, KvCache& cache, const Tokenizer& tokenizer,
                                  std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<void(std::string_view)>& on_text = {});

}  // namespace zl
