#include "engine/tokenizer/utf8.h"

namespace chorus::tok {
namespace {

bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

// Allowed range of the second byte for a given lead byte (RFC 3629 table), which rules out
// overlong forms, surrogates and code points above U+10FFFF in one check.
void second_byte_range(uint8_t lead, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead == 0xE0) *lo = 0xA0;
  if (lead == 0xED) *hi = 0x9F;
  if (lead == 0xF0) *lo = 0x90;
  if (lead == 0xF4) *hi = 0x8F;
}

}  // namespace

Utf8Seq utf8_decode(std::string_view text) {
  Utf8Seq r;
  if (text.empty()) {
    r.status = Utf8Status::Incomplete;
    r.n_bytes = 0;
    return r;
  }
  const auto lead = static_cast<uint8_t>(text[0]);
  if (lead < 0x80) return {Utf8Status::Valid, 1, lead};
  size_t need = 0;
  uint32_t cpt = 0;
  if (lead >= 0xC2 && lead <= 0xDF) { need = 2; cpt = lead & 0x1F; }
  else if (lead >= 0xE0 && lead <= 0xEF) { need = 3; cpt = lead & 0x0F; }
  else if (lead >= 0xF0 && lead <= 0xF4) { need = 4; cpt = lead & 0x07; }
  else return r;  // continuation byte, C0/C1 or F5..FF: never valid as a lead
  uint8_t lo = 0, hi = 0;
  second_byte_range(lead, &lo, &hi);
  for (size_t i = 1; i < need; ++i) {
    if (i >= text.size()) return {Utf8Status::Incomplete, i, 0};
    const auto b = static_cast<uint8_t>(text[i]);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : is_cont(b);
    if (!ok) return {Utf8Status::Invalid, i, 0};  // drop what we saw; `b` may start anew
    cpt = (cpt << 6) | (b & 0x3F);
  }
  return {Utf8Status::Valid, need, cpt};
}

size_t utf8_valid_prefix(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Utf8Seq s = utf8_decode(text.substr(pos));
    if (s.status != Utf8Status::Valid) break;
    pos += s.n_bytes;
  }
  return pos;
}

void utf8_append(std::string& out, uint32_t cpt) {
  if (cpt < 0x80) {
    out += static_cast<char>(cpt);
  } else if (cpt < 0x800) {
    out += static_cast<char>(0xC0 | (cpt >> 6));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else if (cpt < 0x10000) {
    out += static_cast<char>(0xE0 | (cpt >> 12));
    out += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cpt >> 18));
    out += static_cast<char>(0x80 | ((cpt >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cpt >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cpt & 0x3F));
  }
}

}  // namespace chorus::tok

namespace chorus::tok {

std::string utf8_sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Seq s = utf8_decode(text.substr(pos));
    if (s.status == Utf8Status::Valid) {
      out.append(text.data() + pos, s.n_bytes);
    } else {
      out += kReplacementChar;
    }
    pos += s.n_bytes == 0 ? 1 : s.n_bytes;
  }
  return out;
}

}  // namespace chorus::tok
