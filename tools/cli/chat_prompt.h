// `generate --chat`: the prompt becomes one user message rendered through the
// model's chat template (or --chat-template FILE|chatml) with
// add_generation_prompt=true, then token ids, by render_chat_prompt as the
// servers do.
// It opens the model's metadata and tokenizer itself (no weights), so the
// caller can hand the ids to the engine as Request::prompt_ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bundle/chat_prompt.h"
#include "common.h"
#include "zerolayer/status.h"

namespace zl::cli {

// Also adds the template's end-of-turn ids to `stop_token_ids` unless
// `ignore_eos`, so the answer ends with the assistant's turn.
StatusOr<ChatPrompt> build_chat_prompt(const ModelFlags& flags, const std::string& user_text,
                                       const std::string& chat_template, bool ignore_eos,
                                       std::vector<int32_t>& stop_token_ids);

}  // namespace zl::cli
