#include "engine/tokenizer/byte_unicode.h"

#include <array>

#include "engine/tokenizer/utf8.h"

namespace chorus::tok {
namespace {

bool stands_for_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 324> to_byte;  // code point (< 256 + 68) -> byte, -1 when unmapped

  Tables() {
    to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const int cpt = stands_for_itself(b) ? b : next++;
      utf8_append(to_unicode[b], static_cast<uint32_t>(cpt));
      to_byte[cpt] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;  // thread-safe initialisation (C++11 magic statics)
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return tables().to_unicode[byte]; }

std::optional<std::string> unicode_to_bytes(std::string_view mapped) {
  const Tables& t = tables();
  std::string out;
  out.reserve(mapped.size());
  size_t pos = 0;
  while (pos < mapped.size()) {
    const Utf8Seq s = utf8_decode(mapped.substr(pos));
    if (s.status != Utf8Status::Valid || s.cpt >= t.to_byte.size() || t.to_byte[s.cpt] < 0) {
      return std::nullopt;
    }
    out += static_cast<char>(t.to_byte[s.cpt]);
    pos += s.n_bytes;
  }
  return out;
}

std::string bytes_to_unicode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) out += byte_to_unicode(static_cast<uint8_t>(c));
  return out;
}

}  // namespace chorus::tok
