#pragma once
// Code-point view of UTF-8 strings. Python strings index, slice, count and pad by code
// point, so every such operation goes through here. Invalid bytes survive a round trip as
// lone surrogates U+DC80..U+DCFF (Python's "surrogateescape"), so random input never breaks.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::chat::utf8 {

std::vector<uint32_t> decode(std::string_view s);
std::string encode(const std::vector<uint32_t>& cps);
void append(std::string& out, uint32_t cp);
size_t length(std::string_view s);
bool is_ascii(std::string_view s);

// Python str.isspace() for one code point.
bool is_space(uint32_t cp);
bool is_alpha(uint32_t cp);
bool is_digit(uint32_t cp);
bool is_upper(uint32_t cp);
bool is_lower(uint32_t cp);
// Simple case mappings for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic.
uint32_t to_upper(uint32_t cp);
uint32_t to_lower(uint32_t cp);

std::string upper(std::string_view s);
std::string lower(std::string_view s);

// Byte offset of code point `index` in `s` (clamped to s.size()).
size_t byte_offset(std::string_view s, size_t index);

}  // namespace chorus::chat::utf8
