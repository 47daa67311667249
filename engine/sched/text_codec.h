#pragma once
// What the engine needs from the tokenizer and chat template, as an interface, so the
// scheduler and engine are tested with a fake and wired to the real tokenizer in
// default_engine.cpp. Used only on the engine thread.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/result.h"
#include "engine/sched/engine_api.h"

namespace chorus {

// Turns a stream of token ids into valid UTF-8 pieces (bytes of an incomplete character
// wait for the next token).
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  virtual void push(int32_t token, std::string& out) = 0;  // appends to `out`
  virtual void flush(std::string& out) = 0;                // end of stream
};

class TextCodec {
 public:
  virtual ~TextCodec() = default;
  // Renders the conversation with the model's chat template (ready for the assistant's
  // turn) and tokenizes it; user text never becomes control tokens.
  virtual Result<std::vector<int32_t>> encode_messages(
      const std::vector<ChatMessage>& messages) = 0;
  virtual std::unique_ptr<StreamDecoder> new_decoder() = 0;
  virtual bool is_end_of_generation(int32_t token) const = 0;
};

}  // namespace chorus
