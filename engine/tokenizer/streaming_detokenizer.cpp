#include "engine/tokenizer/streaming_detokenizer.h"

#include "engine/tokenizer/utf8.h"

namespace chorus::tok {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options)
    : tok_(tokenizer), options_(options) {
  reset();
}

void StreamingDetokenizer::reset() {
  pending_.clear();
  strip_space_ = options_.at_start && tok_.strips_leading_space();
}

std::string StreamingDetokenizer::push(int32_t id) {
  std::string piece = tok_.token_to_bytes(id, options_.control);
  if (strip_space_ && !piece.empty()) {
    if (piece[0] == ' ') piece.erase(0, 1);
    strip_space_ = false;
  }
  pending_ += piece;
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Seq s = utf8_decode(std::string_view(pending_).substr(pos));
    if (s.status == Utf8Status::Incomplete) break;  // wait for the next token
    if (s.status == Utf8Status::Valid) out.append(pending_, pos, s.n_bytes);
    else out += kReplacementChar;
    pos += s.n_bytes;
  }
  pending_.erase(0, pos);
  return out;
}

std::string StreamingDetokenizer::flush() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace chorus::tok
