#include "engine/sched/gguf_text_codec.h"

#include <optional>

#include "engine/chat/chat_template.h"
#include "engine/gguf/gguf_reader.h"
#include "engine/tokenizer/streaming_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace chorus {
namespace {

const char kChatMlTemplate[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

class Detokenizer final : public StreamDecoder {
 public:
  explicit Detokenizer(const tok::Tokenizer& t) : d_(t) {}
  void push(int32_t token, std::string& out) override { out += d_.push(token); }
  void flush(std::string& out) override { out += d_.flush(); }

 private:
  tok::StreamingDetokenizer d_;
};

// Placeholder standing in for message i while the template renders, so that the template's
// own text can be tokenized with special tokens on and the messages with them off.
std::string sentinel(size_t i) { return "\x1f" "chorus-message-" + std::to_string(i) + "\x1f"; }

class GgufTextCodec final : public TextCodec {
 public:
  GgufTextCodec(std::unique_ptr<tok::Tokenizer> t, std::string tmpl)
      : tok_(std::move(t)), template_(std::move(tmpl)) {
    if (tok_->bos_id() >= 0) bos_text_ = tok_->token_to_bytes(tok_->bos_id(), tok::ControlTokens::Render);
    if (tok_->eos_id() >= 0) eos_text_ = tok_->token_to_bytes(tok_->eos_id(), tok::ControlTokens::Render);
  }

  Result<std::vector<int32_t>> encode_messages(const std::vector<ChatMessage>& messages) override {
    std::vector<chat::ChatMessage> placeholders;
    for (size_t i = 0; i < messages.size(); ++i) placeholders.push_back({messages[i].role, sentinel(i)});
    auto rendered = render(placeholders);
    if (!rendered.ok()) return rendered.error();
    std::vector<int32_t> ids;
    if (!split_encode(*rendered, messages, ids)) {
      // The template rewrote the message text (e.g. changed its case), so the placeholders
      // cannot be found: render the real text and parse special tokens everywhere.
      std::vector<chat::ChatMessage> real;
      for (const ChatMessage& m : messages) real.push_back({m.role, m.content});
      auto text = render(real);
      if (!text.ok()) return text.error();
      ids.clear();
      tok_->encode_into(*text, tok::SpecialParsing::On, ids);
    }
    if (tok_->add_bos() && (ids.empty() || ids.front() != tok_->bos_id())) {
      ids.insert(ids.begin(), tok_->bos_id());
    }
    if (ids.empty()) return make_error("the chat template rendered an empty prompt");
    return ids;
  }

  std::unique_ptr<StreamDecoder> new_decoder() override { return std::make_unique<Detokenizer>(*tok_); }
  bool is_end_of_generation(int32_t token) const override { return tok_->is_end_of_generation(token); }

 private:
  Result<std::string> render(const std::vector<chat::ChatMessage>& messages) const {
    return chat::apply_chat_template(template_, messages, chat::GenerationPrompt::kAdd, bos_text_,
                                     eos_text_);
  }

  // Template text between placeholders: special tokens on; message text: off.
  bool split_encode(const std::string& rendered, const std::vector<ChatMessage>& messages,
                    std::vector<int32_t>& ids) const {
    size_t pos = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
      const std::string s = sentinel(i);
      const size_t at = rendered.find(s, pos);
      if (at == std::string::npos) return false;
      tok_->encode_into(std::string_view(rendered).substr(pos, at - pos), tok::SpecialParsing::On, ids);
      tok_->encode_into(messages[i].content, tok::SpecialParsing::Off, ids);
      pos = at + s.size();
    }
    if (rendered.find('\x1f', pos) != std::string::npos) return false;
    tok_->encode_into(std::string_view(rendered).substr(pos), tok::SpecialParsing::On, ids);
    return true;
  }

  std::unique_ptr<tok::Tokenizer> tok_;
  std::string template_;
  std::string bos_text_, eos_text_;
};

}  // namespace

Result<std::unique_ptr<TextCodec>> open_gguf_text_codec(const std::string& model_path) {
  auto reader = gguf::Reader::open(model_path);
  if (!reader.ok()) return reader.error();
  auto t = tok::Tokenizer::from_gguf(*reader);
  if (!t.ok()) return t.error();
  std::string tmpl = reader->get_string_or("tokenizer.chat_template", "");
  if (tmpl.empty()) tmpl = kChatMlTemplate;
  return std::unique_ptr<TextCodec>(std::make_unique<GgufTextCodec>(std::move(t).value(), std::move(tmpl)));
}

}  // namespace chorus
