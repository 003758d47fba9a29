#include "chat_prompt.h"

#include "bundle/chat_prompt.h"
#include "bundle/model_loader.h"

namespace zl::cli {

StatusOr<ChatPrompt> build_chat_prompt(const ModelFlags& flags, const std::string& user_text,
                                       const std::string& chat_template) {
  LoadOptions load;
  load.tokenizer_path = flags.tokenizer;
  ZL_ASSIGN_OR_RETURN(ModelSource source, open_model(flags.model, load));
  if (!source.tokenizer) return source.tokenizer_status.ok() ? not_found(flags.model, ": no tokenizer") : source.tokenizer_status;
  ZL_ASSIGN_OR_RETURN(LoadedChatTemplate loaded, load_chat_template(source.path, flags.tokenizer, source.chat_template,
                                                                    chat_template, source.tokenizer.get()));
  ChatTemplateOptions options;
  options.add_generation_prompt = true;
  options.bos_token = loaded.bos_token;
  options.eos_token = loaded.eos_token;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  messages.push_back({{"role", "user"}, {"content", user_text}});
  ChatPrompt prompt;
  ZL_ASSIGN_OR_RETURN(prompt.text, apply_chat_template(*loaded.chat_template, messages, options));
  prompt.ids = encode_chat_prompt(*source.tokenizer, prompt.text, loaded.bos_token);
  return prompt;
}

}  // namespace zl::cli
