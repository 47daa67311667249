#pragma once
// Python str behaviour shared by string methods and filters (both need strip, split,
// title case and friends with identical semantics).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::chat::str_ops {

enum class StripSide { kBoth, kLeft, kRight };
// `chars` nullopt: strip Unicode whitespace, as str.strip() with no argument.
std::string strip(std::string_view s, const std::optional<std::string>& chars, StripSide side);
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t max_split);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t max_split);
std::vector<std::string> splitlines(std::string_view s, bool keep_ends);
std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count);
std::string python_title(std::string_view s);   // str.title()
std::string capitalize(std::string_view s);     // str.capitalize()
std::string swapcase(std::string_view s);
// str.center/ljust/rjust with a one-character fill.
std::string pad(std::string_view s, size_t width, std::string_view fill, int align /*-1 left, 0 center, 1 right*/);
int64_t count(std::string_view s, std::string_view sub);
// Code-point index of the first/last occurrence, or -1.
int64_t find(std::string_view s, std::string_view sub, bool from_right);

}  // namespace chorus::chat::str_ops
