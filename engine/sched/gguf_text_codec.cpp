#include "engine/sched/gguf_text_codec.h"

#include "engine/gguf/gguf_reader.h"
#include "engine/prompt/chat_prompt.h"
#include "engine/tokenizer/streaming_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace chorus {
namespace {

class Detokenizer final : public StreamDecoder {
 public:
  explicit Detokenizer(const tok::Tokenizer& t) : d_(t) {}
  void push(int32_t token, std::string& out) override { out += d_.push(token); }
  void flush(std::string& out) override { out += d_.flush(); }

 private:
  tok::StreamingDetokenizer d_;
};

class GgufTextCodec final : public TextCodec {
 public:
  // `prompt` refers to `*tokenizer`, which this object keeps alive (and in place). A model
  // whose template cannot be used still serves requests given as tokens; requests given as
  // messages then fail with the template's error.
  GgufTextCodec(std::unique_ptr<tok::Tokenizer> tokenizer, Result<ChatPrompt> prompt)
      : tok_(std::move(tokenizer)), prompt_(std::move(prompt)) {}

  Result<std::vector<int32_t>> encode_messages(const std::vector<ChatMessage>& messages) override {
    if (!prompt_.ok()) return prompt_.error();
    return prompt_->encode(messages);
  }
  std::unique_ptr<StreamDecoder> new_decoder() override { return std::make_unique<Detokenizer>(*tok_); }
  bool is_end_of_generation(int32_t token) const override { return tok_->is_end_of_generation(token); }

 private:
  std::unique_ptr<tok::Tokenizer> tok_;
  Result<ChatPrompt> prompt_;
};

}  // namespace

Result<std::unique_ptr<TextCodec>> open_gguf_text_codec(const std::string& model_path) {
  auto reader = gguf::Reader::open(model_path);
  if (!reader.ok()) return reader.error();
  auto tokenizer = tok::Tokenizer::from_gguf(*reader);
  if (!tokenizer.ok()) return tokenizer.error();
  // The tokenizer is built on the heap and never moves, so the prompt's reference holds.
  std::unique_ptr<tok::Tokenizer> t = std::move(tokenizer).value();
  auto prompt = ChatPrompt::from_gguf(*reader, *t);
  return std::unique_ptr<TextCodec>(std::make_unique<GgufTextCodec>(std::move(t), std::move(prompt)));
}

}  // namespace chorus
