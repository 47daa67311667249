#pragma once
// Messages -> prompt tokens: the model's own chat template (ChatML when it ships none),
// rendered once per request and tokenized so that special tokens are recognised only in
// the template's own text. Message contents are located in the rendered text and tokenized
// with special parsing off, so a user typing "<|im_end|>" gets those characters, never the
// control token.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/core/result.h"
#include "engine/sched/engine_api.h"
#include "engine/tokenizer/tokenizer.h"

namespace chorus {
namespace gguf { class Reader; }

inline constexpr const char* kChatMlTemplate =
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

class ChatPrompt {
 public:
  // Uses tokenizer.chat_template from the file, or ChatML when absent. The tokenizer must
  // outlive this object.
  static Result<ChatPrompt> from_gguf(const gguf::Reader& reader, const tok::Tokenizer& tokenizer);
  static Result<ChatPrompt> from_template(const std::string& source, const tok::Tokenizer& tokenizer);

  bool uses_model_template() const { return from_model_; }
  // The rendered text (ready for the assistant's turn).
  Result<std::string> render(const std::vector<ChatMessage>& messages) const;
  Result<std::vector<int32_t>> encode(const std::vector<ChatMessage>& messages) const;

 private:
  chat::ChatTemplate template_;
  const tok::Tokenizer* tokenizer_ = nullptr;
  std::string bos_text_, eos_text_;
  bool from_model_ = false;
};

}  // namespace chorus
