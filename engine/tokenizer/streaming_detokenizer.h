#pragma once
// Turns a stream of generated token ids into text that is always valid UTF-8, for display.
//
// Byte-level tokens may end in the middle of a character (an emoji is often 2-4 tokens).
// push() appends the token's bytes and returns only the newly completed characters; an
// incomplete tail is held until later tokens complete it. Bytes that can never become valid
// are emitted as U+FFFD at once; flush() ends the stream and turns a held incomplete tail
// into U+FFFD. SentencePiece's leading space is dropped at the start of the stream, as
// Tokenizer::decode does.
//
// One instance per stream; not thread-safe. The Tokenizer must outlive it.
#include <cstdint>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace chorus::tok {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options = {});

  std::string push(int32_t id);
  std::string flush();
  // Starts a new stream with the same options.
  void reset();
  // Bytes held back, waiting for the rest of a character.
  size_t n_pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tok_;
  DecodeOptions options_;
  bool strip_space_ = false;
  std::string pending_;
};

}  // namespace chorus::tok
