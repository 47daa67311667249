#include "engine/chat/str_ops.h"

#include <algorithm>

#include "engine/chat/utf8.h"

namespace chorus::chat::str_ops {
namespace {

bool is_line_break(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
         cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

}  // namespace

std::string strip(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  const auto cps = utf8::decode(s);
  std::vector<uint32_t> set;
  if (chars) set = utf8::decode(*chars);
  auto strippable = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : utf8::is_space(cp);
  };
  size_t b = 0, e = cps.size();
  if (side != StripSide::kRight) while (b < e && strippable(cps[b])) ++b;
  if (side != StripSide::kLeft) while (e > b && strippable(cps[e - 1])) --e;
  return utf8::encode(std::vector<uint32_t>(cps.begin() + static_cast<std::ptrdiff_t>(b),
                                            cps.begin() + static_cast<std::ptrdiff_t>(e)));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t max_split) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (max_split < 0 || static_cast<int64_t>(out.size()) < max_split) {
      const size_t hit = s.find(*sep, start);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(start, hit - start));
      start = hit + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  const auto cps = utf8::decode(s);
  size_t i = 0;
  while (true) {
    while (i < cps.size() && utf8::is_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(out.size()) >= max_split) {
      out.push_back(utf8::encode(std::vector<uint32_t>(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.end())));
      break;
    }
    size_t j = i;
    while (j < cps.size() && !utf8::is_space(cps[j])) ++j;
    out.push_back(utf8::encode(std::vector<uint32_t>(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j))));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t max_split) {
  if (max_split < 0) return split(s, sep, max_split);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < max_split && end >= sep->size()) {
      const size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    const auto cps = utf8::decode(s);
    size_t j = cps.size();
    while (true) {
      while (j > 0 && utf8::is_space(cps[j - 1])) --j;
      if (j == 0) break;
      if (static_cast<int64_t>(out.size()) >= max_split) {
        out.push_back(utf8::encode(std::vector<uint32_t>(cps.begin(), cps.begin() + static_cast<std::ptrdiff_t>(j))));
        break;
      }
      size_t i = j;
      while (i > 0 && !utf8::is_space(cps[i - 1])) --i;
      out.push_back(utf8::encode(std::vector<uint32_t>(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(j))));
      j = i;
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keep_ends) {
  std::vector<std::string> out;
  const auto cps = utf8::decode(s);
  std::vector<uint32_t> line;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (!is_line_break(cps[i])) { line.push_back(cps[i]); continue; }
    const bool crlf = cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n';
    if (keep_ends) {
      line.push_back(cps[i]);
      if (crlf) line.push_back('\n');
    }
    if (crlf) ++i;
    out.push_back(utf8::encode(line));
    line.clear();
  }
  if (!line.empty()) out.push_back(utf8::encode(line));
  return out;
}

std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts the replacement between every code point and at both ends.
    const auto cps = utf8::decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) { out += new_text; ++done; }
      if (i < cps.size()) utf8::append(out, cps[i]);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old_text, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += new_text;
    start = hit + old_text.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

std::string python_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (uint32_t cp : utf8::decode(s)) {
    const bool cased = utf8::is_upper(cp) || utf8::is_lower(cp);
    utf8::append(out, cased ? (prev_cased ? utf8::to_lower(cp) : utf8::to_upper(cp)) : cp);
    prev_cased = cased;
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (uint32_t cp : utf8::decode(s)) {
    utf8::append(out, first ? utf8::to_upper(cp) : utf8::to_lower(cp));
    first = false;
  }
  return out;
}

std::string swapcase(std::string_view s) {
  std::string out;
  for (uint32_t cp : utf8::decode(s))
    utf8::append(out, utf8::is_upper(cp) ? utf8::to_lower(cp) : utf8::to_upper(cp));
  return out;
}

std::string pad(std::string_view s, size_t width, std::string_view fill, int align) {
  const size_t len = utf8::length(s);
  if (width <= len) return std::string(s);
  const size_t total = width - len;
  size_t left = 0;
  if (align == 1) left = total;
  else if (align == 0) left = total / 2 + (total & width & 1);  // CPython's center()
  std::string out;
  for (size_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (size_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(utf8::length(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

int64_t find(std::string_view s, std::string_view sub, bool from_right) {
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(utf8::length(s.substr(0, at)));
}

}  // namespace chorus::chat::str_ops
