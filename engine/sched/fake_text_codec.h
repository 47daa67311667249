#pragma once
// A deterministic TextCodec for tests and the fake bench backend: every token id maps to a
// short piece over a small alphabet (so stop strings occur and straddle tokens), with a
// few multi-byte UTF-8 pieces; messages encode byte by byte.
#include <cstdint>
#include <string>

#include "engine/sched/text_codec.h"

namespace chorus {

struct FakeTextCodecOptions {
  int32_t n_vocab = 256;
  int32_t eog_token = -1;  // -1: no end-of-generation token
};

class FakeTextCodec final : public TextCodec {
 public:
  explicit FakeTextCodec(FakeTextCodecOptions options = {}) : opt_(options) {}

  Result<std::vector<int32_t>> encode_messages(const std::vector<ChatMessage>& messages) override;
  std::unique_ptr<StreamDecoder> new_decoder() override;
  bool is_end_of_generation(int32_t token) const override { return token == opt_.eog_token; }

  // The text of one token.
  static std::string piece(int32_t token);

 private:
  FakeTextCodecOptions opt_;
};

}  // namespace chorus
