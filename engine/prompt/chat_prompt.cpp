#include "engine/prompt/chat_prompt.h"

#include <algorithm>

#include "engine/gguf/gguf_reader.h"

namespace chorus {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

struct Span {
  size_t begin, end;  // [begin, end) of the rendered text that is message content
};

// Whether the text contains any control/user-defined token's text.
bool contains_special_text(const tok::Tokenizer& tok, std::string_view text) {
  return tok.encode(text, tok::SpecialParsing::On) != tok.encode(text, tok::SpecialParsing::Off);
}

}  // namespace

Result<ChatPrompt> ChatPrompt::from_template(const std::string& source, const tok::Tokenizer& tokenizer) {
  auto parsed = chat::ChatTemplate::parse(source);
  if (!parsed) return make_error("chat template: " + parsed.message());
  ChatPrompt p;
  p.template_ = std::move(*parsed);
  p.tokenizer_ = &tokenizer;
  if (tokenizer.bos_id() >= 0) p.bos_text_ = tokenizer.token_text(tokenizer.bos_id());
  if (tokenizer.eos_id() >= 0) p.eos_text_ = tokenizer.token_text(tokenizer.eos_id());
  return p;
}

Result<ChatPrompt> ChatPrompt::from_gguf(const gguf::Reader& reader, const tok::Tokenizer& tokenizer) {
  const gguf::Value* t = reader.find("tokenizer.chat_template");
  const bool from_model = t && t->type == gguf::ValueType::STRING && !t->s.empty();
  auto p = from_template(from_model ? t->s : std::string(kChatMlTemplate), tokenizer);
  if (!p) return make_error(reader.path() + ": " + p.message());
  p->from_model_ = from_model;
  return p;
}

Result<std::string> ChatPrompt::render(const std::vector<ChatMessage>& messages) const {
  chat::Value list = chat::Value::list({});
  for (const ChatMessage& m : messages) {
    chat::Value msg = chat::Value::dict();
    msg.dict_set("role", chat::Value::string(m.role));
    msg.dict_set("content", chat::Value::string(m.content));
    list.list_push(std::move(msg));
  }
  chat::Value ctx = chat::Value::dict();
  ctx.dict_set("messages", std::move(list));
  ctx.dict_set("add_generation_prompt", chat::Value::boolean(true));
  ctx.dict_set("bos_token", chat::Value::string(bos_text_));
  ctx.dict_set("eos_token", chat::Value::string(eos_text_));
  auto text = template_.render(ctx);
  if (!text) return make_error("chat template: " + text.message());
  return text;
}

Result<std::vector<int32_t>> ChatPrompt::encode(const std::vector<ChatMessage>& messages) const {
  auto rendered = render(messages);
  if (!rendered) return rendered.error();
  const std::string& text = *rendered;

  // Locate each message's content in order; templates may trim it.
  std::vector<Span> spans;
  size_t cursor = 0;
  for (const ChatMessage& m : messages) {
    if (m.content.empty()) continue;
    std::string_view needle = m.content;
    size_t at = text.find(needle, cursor);
    if (at == std::string::npos) {
      needle = trim(m.content);
      at = needle.empty() ? std::string::npos : text.find(needle, cursor);
    }
    if (at == std::string::npos) {
      // Content the template rewrote cannot be told apart from template text; refuse only
      // when that could smuggle in a control token.
      if (contains_special_text(*tokenizer_, m.content)) {
        return make_error("chat template rewrites message text that contains special-token text; "
                          "cannot build a safe prompt");
      }
      continue;
    }
    spans.push_back({at, at + needle.size()});
    cursor = at + needle.size();
  }

  std::vector<int32_t> ids;
  const bool starts_with_bos = !bos_text_.empty() && text.compare(0, bos_text_.size(), bos_text_) == 0;
  if (tokenizer_->add_bos() && !starts_with_bos) ids.push_back(tokenizer_->bos_id());
  size_t pos = 0;
  for (const Span& s : spans) {
    tokenizer_->encode_into(std::string_view(text).substr(pos, s.begin - pos), tok::SpecialParsing::On, ids);
    tokenizer_->encode_into(std::string_view(text).substr(s.begin, s.end - s.begin), tok::SpecialParsing::Off, ids);
    pos = s.end;
  }
  tokenizer_->encode_into(std::string_view(text).substr(pos), tok::SpecialParsing::On, ids);
  return ids;
}

}  // namespace chorus
