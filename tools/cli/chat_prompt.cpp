#include "chat_prompt.h"

#include "bundle/chat_prompt.h"
#include "bundle/model_loader.h"

namespace zl::cli {

StatusOr<ChatPrompt> build_chat_prompt(const ModelFlags& flags, const std::string& user_text,
                                       const std::string& chat_template, bool ignore_eos,
                                       std::vector<int32_t>& stop_token_ids) {
  LoadOptions load;
  load.tokenizer_path = flags.tokenizer;
  ZL_ASSIGN_OR_RETURN(ModelSource source, open_model(flags.model, load));
  if (!source.tokenizer) return source.tokenizer_status.ok() ? not_found(flags.model, ": no tokenizer") : source.tokenizer_status;
  ZL_ASSIGN_OR_RETURN(LoadedChatTemplate loaded, load_chat_template(source.path, flags.tokenizer, source.chat_template,
                                                                    chat_template, source.tokenizer.get()));
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "user"}, {"content", user_text}});
  ZL_ASSIGN_OR_RETURN(ChatPrompt prompt, render_chat_prompt(loaded, *source.tokenizer, messages, {}));
  add_end_of_turn_stops(loaded, ignore_eos, stop_token_ids);
  return prompt;
}

}  // namespace zl::cli
