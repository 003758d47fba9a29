// Fill in the middle: OpenAI's `suffix` on /v1/completions, for code models
// trained with FIM tokens, which write the text between a prefix (the
// prompt) and a suffix. The prompt is laid out as llama-server's /infill
// lays it out, prefix first:
//   [bos] <prefix token> prefix <suffix token> suffix <middle token>
// The tokens are found by name in the vocabulary, one family at a time:
//   <|fim_prefix|> <|fim_suffix|> <|fim_middle|>   Qwen 2.5 Coder, Qwen3
//   <fim_prefix> <fim_suffix> <fim_middle>         StarCoder, SmolLM, Granite code
//   <｜fim▁begin｜> <｜fim▁hole｜> <｜fim▁end｜>     DeepSeek Coder
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace zl::server {

struct FimTokens {
  int32_t prefix = -1, suffix = -1, middle = -1;
};

// The vocabulary's FIM tokens, each a single token of its own name; none if
// no family is complete.
std::optional<FimTokens> find_fim_tokens(const Tokenizer& tokenizer);

// The ids of the layout above (bos when the tokenizer adds one).
std::vector<int32_t> fill_in_middle_prompt(const Tokenizer& tokenizer, const FimTokens& fim, std::string_view prefix,
                                           std::string_view suffix);

}  // namespace zl::server
