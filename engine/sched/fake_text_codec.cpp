#include "engine/sched/fake_text_codec.h"

namespace chorus {
namespace {

class FakeDecoder final : public StreamDecoder {
 public:
  void push(int32_t token, std::string& out) override { out += FakeTextCodec::piece(token); }
  void flush(std::string&) override {}
};

}  // namespace

std::string FakeTextCodec::piece(int32_t token) {
  const uint32_t t = static_cast<uint32_t>(token);
  if (t % 23 == 5) return "\xc3\xa9";      // U+00E9, two bytes
  if (t % 29 == 7) return "\xe2\x86\x92";  // U+2192, three bytes
  static const char alphabet[] = "abcde ";
  const uint32_t len = 1 + t % 3;
  std::string s;
  for (uint32_t k = 0; k < len; ++k) s += alphabet[(t / 3 + k * 5) % 6];
  return s;
}

Result<std::vector<int32_t>> FakeTextCodec::encode_messages(
    const std::vector<ChatMessage>& messages) {
  std::vector<int32_t> ids;
  for (const ChatMessage& m : messages) {
    const std::string line = m.role + ": " + m.content + "\n";
    for (unsigned char c : line) ids.push_back(1 + static_cast<int32_t>(c) % (opt_.n_vocab - 1));
  }
  if (ids.empty()) return make_error("empty conversation");
  return ids;
}

std::unique_ptr<StreamDecoder> FakeTextCodec::new_decoder() {
  return std::make_unique<FakeDecoder>();
}

}  // namespace chorus
