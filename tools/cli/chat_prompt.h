// `generate --chat`: the prompt becomes one user message rendered through the
// model's chat template (or --chat-template FILE|chatml) with
// add_generation_prompt=true, then token ids. Special-token text the template
// writes (<|im_start|>, <s>, ...) is parsed as special tokens, and bos is only
// added by the tokenizer when the template did not already write it.
// It opens the model's metadata and tokenizer itself (no weights), so the
// caller can hand the ids to the engine as Request::prompt_ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "zerolayer/status.h"

namespace zl::cli {

struct ChatPrompt {
  std::string text;             // the rendered prompt
  std::vector<int32_t> ids;
};

StatusOr<ChatPrompt> build_chat_prompt(const ModelFlags& flags, const std::string& user_text,
                                       const std::string& chat_template);

}  // namespace zl::cli
