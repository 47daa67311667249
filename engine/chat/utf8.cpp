#include "engine/chat/utf8.h"

namespace chorus::chat::utf8 {
namespace {

constexpr uint32_t kEscapeBase = 0xDC00;  // invalid byte b decodes to U+DC00 + b

// Decodes one sequence at s[i]; returns its length in bytes (1 for an invalid byte).
size_t decode_one(std::string_view s, size_t i, uint32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) { *cp = b0; return 1; }
  size_t n = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) { n = 2; *cp = b0 & 0x1F; min = 0x80; }
  else if ((b0 & 0xF0) == 0xE0) { n = 3; *cp = b0 & 0x0F; min = 0x800; }
  else if ((b0 & 0xF8) == 0xF0) { n = 4; *cp = b0 & 0x07; min = 0x10000; }
  if (n == 0 || i + n > s.size()) { *cp = kEscapeBase + b0; return 1; }
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) { *cp = kEscapeBase + b0; return 1; }
    *cp = (*cp << 6) | (b & 0x3F);
  }
  if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) {
    *cp = kEscapeBase + b0;
    return 1;
  }
  return n;
}

}  // namespace

bool is_ascii(std::string_view s) {
  for (char c : s) if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    i += decode_one(s, i, &cp);
    out.push_back(cp);
  }
  return out;
}

void append(std::string& out, uint32_t cp) {
  if (cp >= kEscapeBase + 0x80 && cp <= kEscapeBase + 0xFF) {
    out.push_back(static_cast<char>(cp - kEscapeBase));  // an escaped invalid byte
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode(const std::vector<uint32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (uint32_t cp : cps) append(out, cp);
  return out;
}

size_t length(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    uint32_t cp = 0;
    i += decode_one(s, i, &cp);
  }
  return n;
}

size_t byte_offset(std::string_view s, size_t index) {
  size_t i = 0;
  for (size_t n = 0; n < index && i < s.size(); ++n) {
    uint32_t cp = 0;
    i += decode_one(s, i, &cp);
  }
  return i;
}

bool is_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

uint32_t to_upper(uint32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if (cp < 0xB5) return cp;
  if (cp == 0xB5) return 0x39C;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149) {
    const bool odd_is_lower = !(cp >= 0x139 && cp <= 0x148) && !(cp >= 0x179 && cp <= 0x17E);
    if (odd_is_lower ? (cp & 1) : !(cp & 1)) return cp - 1;
    return cp;
  }
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp == 0x3C2) return 0x3A3;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

uint32_t to_lower(uint32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0xC0) return cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149) {
    const bool even_is_upper = !(cp >= 0x139 && cp <= 0x148) && !(cp >= 0x179 && cp <= 0x17E);
    if (even_is_upper ? !(cp & 1) : (cp & 1)) return cp + 1;
    return cp;
  }
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool is_upper(uint32_t cp) { return to_lower(cp) != cp; }
bool is_lower(uint32_t cp) { return to_upper(cp) != cp || cp == 0xDF; }

bool is_alpha(uint32_t cp) {
  if (cp < 0x80) return (cp | 32) >= 'a' && (cp | 32) <= 'z';
  if (is_upper(cp) || is_lower(cp)) return true;
  // Scripts without case: CJK ideographs, kana, Hangul; good enough for templates.
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3040 && cp <= 0x30FF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0x5D0 && cp <= 0x6FF);
}

bool is_digit(uint32_t cp) { return cp >= '0' && cp <= '9'; }

std::string upper(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out) if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    return out;
  }
  std::string out;
  for (uint32_t cp : decode(s)) {
    if (cp == 0xDF) { out += "SS"; continue; }  // Python: "ß".upper() == "SS"
    append(out, to_upper(cp));
  }
  return out;
}

std::string lower(std::string_view s) {
  if (is_ascii(s)) {
    std::string out(s);
    for (char& c : out) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return out;
  }
  std::string out;
  for (uint32_t cp : decode(s)) append(out, to_lower(cp));
  return out;
}

}  // namespace chorus::chat::utf8
