#include "engine/chat/string_format.h"

#include <cstdio>

#include "engine/chat/utf8.h"
#include "engine/chat/value_ops.h"

namespace chorus::chat {
namespace {

struct PercentSpec {
  std::string flags;
  int width = -1;
  int precision = -1;
  char conversion = 's';
};

// Pads `text` to the spec's width (right-aligned unless the '-' flag is given).
std::string pad(std::string text, const PercentSpec& spec, bool numeric) {
  const size_t len = utf8::length(text);
  if (spec.width < 0 || len >= static_cast<size_t>(spec.width)) return text;
  const size_t fill = static_cast<size_t>(spec.width) - len;
  if (spec.flags.find('-') != std::string::npos) return text + std::string(fill, ' ');
  if (numeric && spec.flags.find('0') != std::string::npos) {
    const bool sign = !text.empty() && (text[0] == '-' || text[0] == '+');
    return (sign ? text.substr(0, 1) : "") + std::string(fill, '0') + text.substr(sign ? 1 : 0);
  }
  return std::string(fill, ' ') + text;
}

Result<std::string> convert_one(const PercentSpec& spec, const Value& arg) {
  char buf[512];
  const std::string plus = spec.flags.find('+') != std::string::npos ? "+" : "";
  switch (spec.conversion) {
    case 's': {
      std::string s = to_str(arg);
      if (spec.precision >= 0) s = s.substr(0, utf8::byte_offset(s, static_cast<size_t>(spec.precision)));
      return pad(std::move(s), spec, false);
    }
    case 'r': return pad(to_repr(arg), spec, false);
    case 'd': case 'i': case 'u': {
      if (!arg.is_number()) return make_error("%d format: a real number is required, not " + type_name(arg));
      const int64_t v = arg.is_float() ? static_cast<int64_t>(arg.as_double()) : arg.as_int();
      std::string s = std::to_string(v);
      if (v >= 0) s = plus + s;
      return pad(std::move(s), spec, true);
    }
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
      if (!arg.is_number()) return make_error("must be real number, not " + type_name(arg));
      const int precision = spec.precision < 0 ? 6 : std::min(spec.precision, 100);
      const char fmt[] = {'%', '.', '*', spec.conversion, '\0'};
      std::snprintf(buf, sizeof buf, fmt, precision, arg.as_double());
      std::string s = buf;
      if (s[0] != '-') s = plus + s;
      return pad(std::move(s), spec, true);
    }
    case 'x': case 'X': case 'o': {
      if (!arg.is_int()) return make_error("%x format: an integer is required, not " + type_name(arg));
      const int64_t v = arg.as_int();
      const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      const char fmt[] = {'%', 'l', 'l', spec.conversion, '\0'};
      std::snprintf(buf, sizeof buf, fmt, static_cast<unsigned long long>(mag));
      return pad((v < 0 ? "-" : plus) + std::string(buf), spec, true);
    }
    case 'c':
      if (arg.is_string() && arg.length() == 1) return pad(arg.as_string(), spec, false);
      if (arg.is_int() && arg.as_int() >= 0 && arg.as_int() <= 0x10FFFF) {
        std::string s;
        utf8::append(s, static_cast<uint32_t>(arg.as_int()));
        return pad(std::move(s), spec, false);
      }
      return make_error("%c requires an int or a unicode character");
    default:
      return make_error(std::string("unsupported format character '") + spec.conversion + "'");
  }
}

// Parses the spec after '%' at fmt[i]; returns false on a malformed spec.
bool parse_spec(const std::string& fmt, size_t& i, PercentSpec* spec, std::string* key) {
  if (i < fmt.size() && fmt[i] == '(') {
    const size_t close = fmt.find(')', i);
    if (close == std::string::npos) return false;
    *key = fmt.substr(i + 1, close - i - 1);
    i = close + 1;
  }
  while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) spec->flags.push_back(fmt[i++]);
  auto number = [&](int* out) {
    if (i >= fmt.size() || !utf8::is_digit(static_cast<unsigned char>(fmt[i]))) return;
    *out = 0;
    while (i < fmt.size() && utf8::is_digit(static_cast<unsigned char>(fmt[i])))
      *out = std::min(*out * 10 + (fmt[i++] - '0'), 100000);
  };
  number(&spec->width);
  if (i < fmt.size() && fmt[i] == '.') { ++i; spec->precision = 0; number(&spec->precision); }
  while (i < fmt.size() && (fmt[i] == 'l' || fmt[i] == 'h' || fmt[i] == 'L')) ++i;
  if (i >= fmt.size()) return false;
  spec->conversion = fmt[i++];
  return true;
}

}  // namespace

Result<std::string> percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  if (args.is_tuple()) positional = args.items();
  else positional.push_back(args);
  size_t next_arg = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size();) {
    if (fmt[i] != '%') { out.push_back(fmt[i++]); continue; }
    ++i;
    if (i < fmt.size() && fmt[i] == '%') { out.push_back('%'); ++i; continue; }
    PercentSpec spec;
    std::string key;
    if (!parse_spec(fmt, i, &spec, &key)) return make_error("incomplete format");
    const Value* arg = nullptr;
    if (!key.empty() || fmt.find("%(") != std::string::npos) {
      if (!args.is_dict()) return make_error("format requires a mapping");
      arg = args.dict_data().find(key);
      if (!arg) return make_error("KeyError: '" + key + "'");
    } else {
      if (next_arg >= positional.size()) return make_error("not enough arguments for format string");
      arg = &positional[next_arg++];
    }
    auto piece = convert_one(spec, *arg);
    if (!piece.ok()) return piece.error();
    out += *piece;
  }
  if (!args.is_dict() && next_arg < positional.size())
    return make_error("not all arguments converted during string formatting");
  return out;
}

Result<std::string> brace_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') { out.push_back('}'); ++i; continue; }
      return make_error("Single '}' encountered in format string");
    }
    if (c != '{') { out.push_back(c); continue; }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') { out.push_back('{'); ++i; continue; }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) return make_error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    bool want_repr = false;
    if (const size_t colon = field.find(':'); colon != std::string::npos) field.resize(colon);  // spec ignored
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      want_repr = field.substr(bang + 1) == "r";
      field.resize(bang);
    }
    const Value* arg = nullptr;
    if (field.empty()) {
      arg = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
      ++auto_index;
    } else if (utf8::is_digit(static_cast<unsigned char>(field[0]))) {
      const size_t index = static_cast<size_t>(std::atoi(field.c_str()));
      arg = index < args.positional.size() ? &args.positional[index] : nullptr;
    } else {
      arg = args.find(field, static_cast<size_t>(-1));
    }
    if (!arg) return make_error("format: missing argument for '{" + field + "}'");
    out += want_repr ? to_repr(*arg) : to_str(*arg);
  }
  return out;
}

}  // namespace chorus::chat
