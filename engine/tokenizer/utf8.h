#pragma once
// UTF-8 helpers for the tokenizers. Validation is strict (no overlong forms, no surrogates,
// nothing above U+10FFFF) because PCRE2 in UTF mode must only ever see valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chorus::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Outcome of decoding one sequence at the start of a byte range.
enum class Utf8Status { Valid, Invalid, Incomplete };

struct Utf8Seq {
  Utf8Status status = Utf8Status::Invalid;
  size_t n_bytes = 1;  // Valid: sequence length; Invalid: bytes to drop (>= 1); Incomplete: bytes seen
  uint32_t cpt = 0;    // the code point when Valid
};

// Decodes the sequence starting at text[0]. `Incomplete` means the bytes seen so far are a
// proper prefix of some valid sequence but the range ends before it does.
Utf8Seq utf8_decode(std::string_view text);

// Length of the longest prefix of `text` that is valid UTF-8.
size_t utf8_valid_prefix(std::string_view text);

void utf8_append(std::string& out, uint32_t cpt);

}  // namespace chorus::tok

namespace chorus::tok {

// Copies `text`, replacing each maximal invalid or truncated subsequence with U+FFFD.
std::string utf8_sanitize(std::string_view text);

}  // namespace chorus::tok
