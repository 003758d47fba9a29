#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "engine/stop_matcher.h"

namespace zl {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
  }
  return "?";
}

StatusOr<GenerateResult> generate(LlamaModel& model, KvCache& cache, const Tokenizer& tokenizer,
                                  std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const std::function<void(std::string_view)>& on_text) {
  const auto start = std::chrono::steady_clock::now();
  const ModelConfig& config = model.config();
  const int32_t num_prompt = static_cast<int32_t>(prompt.size());
  if (num_prompt == 0) return invalid_argument("the prompt is empty (no tokens)");
  if (num_prompt >= config.max_seq_len)
    return out_of_range("the prompt has ", num_prompt, " tokens, but the context holds ", config.max_seq_len,
                        " (prompt plus at least one new token)");
  if (options.max_new_tokens < 0) return invalid_argument("max_new_tokens must be >= 0, got ", options.max_new_tokens);
  ZL_RETURN_IF_ERROR(validate_sampling(options.sampling, config.vocab_size));
  const int32_t max_total = std::min<int64_t>(config.max_seq_len, int64_t{num_prompt} + options.max_new_tokens);
  if (int64_t{cache.num_blocks()} * cache.block_size() < max_total)
    return resource_exhausted("the KV cache holds ", int64_t{cache.num_blocks()} * cache.block_size(),
                              " tokens, the request needs ", max_total);
  std::vector<int32_t> block_table(static_cast<size_t>((max_total + cache.block_size() - 1) / cache.block_size()));
  std::iota(block_table.begin(), block_table.end(), 0);

  GenerateResult result;
  result.num_prompt_tokens = num_prompt;
  if (options.max_new_tokens == 0) return result;

  Sampler sampler(options.sampling, config.vocab_size);
  sampler.set_prompt(prompt);
  // The prompt primes the decoder so the first output token decodes as a
  // continuation (SentencePiece strips a leading space only at the start).
  StreamDecoder decoder(tokenizer);
  for (int32_t id : prompt) (void)decoder.push(id);
  StopMatcher stops(options.stop);
  std::vector<float> logits(static_cast<size_t>(config.vocab_size));
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    result.text += piece;
    if (on_text) on_text(piece);
  };

  // Prefill in chunks of at most max_batch_tokens; only the last row's logits matter.
  int32_t pos = 0;
  std::vector<int32_t> tokens(prompt.begin(), prompt.end());
  int32_t next_token = -1;
  while (true) {
    int32_t chunk = std::min<int32_t>(model.max_batch_tokens(), static_cast<int32_t>(tokens.size()) - pos);
    SeqChunk seq{0, chunk, pos, block_table};
    int32_t last_row = chunk - 1;
    ForwardBatch batch{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(pos), static_cast<size_t>(chunk)),
                       std::span<const SeqChunk>(&seq, 1), std::span<const int32_t>(&last_row, 1)};
    ZL_RETURN_IF_ERROR(model.forward(batch, cache, logits.data()));
    pos += chunk;
    if (pos < static_cast<int32_t>(tokens.size())) continue;  // still prefilling

    SampleResult sample = sampler.sample(logits.data());
    next_token = sample.token;
    if (result.samples.empty()) result.time_to_first_token_s = seconds_since(start);
    bool is_eos = std::find(options.eos_ids.begin(), options.eos_ids.end(), next_token) != options.eos_ids.end();
    if (is_eos && !options.ignore_eos) {
      result.finish = FinishReason::kStop;
      break;
    }
    result.output_ids.push_back(next_token);
    result.samples.push_back(std::move(sample));
    emit(stops.push(decoder.push(next_token)));
    if (stops.stopped()) {
      result.finish = FinishReason::kStop;
      break;
    }
    tokens.push_back(next_token);
    if (static_cast<int32_t>(tokens.size()) >= max_total) {
      result.finish = FinishReason::kLength;
      break;
    }
  }
  if (!stops.stopped()) emit(stops.push(decoder.flush()) + stops.flush());
  result.total_s = seconds_since(start);
  return result;
}

}  // namespace zl
