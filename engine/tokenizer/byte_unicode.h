#pragma once
// The GPT-2 byte <-> unicode mapping used by byte-level BPE vocabularies: each byte is shown
// as one printable code point ('!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for
// themselves; the other 68 bytes become U+0100.. in byte order), so that every token text is
// printable and a space reads as 'Ġ' (U+0120).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace chorus::tok {

// UTF-8 text of the code point that stands for `byte`.
const std::string& byte_to_unicode(uint8_t byte);

// Original bytes of a byte-mapped token text; nullopt when some code point is not part of
// the mapping (such text cannot come from byte-level BPE).
std::optional<std::string> unicode_to_bytes(std::string_view mapped);

// Byte-maps raw bytes (the inverse of unicode_to_bytes).
std::string bytes_to_unicode(std::string_view raw);

}  // namespace chorus::tok
