#include "engine/chat/json.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "engine/chat/utf8.h"

namespace chorus::chat {
namespace {

constexpr int kMaxJsonDepth = 512;

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  Result<Value> parse_document() {
    auto v = parse_value(0);
    if (!v.ok()) return v;
    skip_space();
    if (pos_ != s_.size()) return fail("unexpected trailing characters");
    return v;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;

  Error fail(const std::string& what) const {
    return make_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Result<Value> parse_value(int depth) {
    if (depth > kMaxJsonDepth) return fail("nesting too deep");
    skip_space();
    if (pos_ >= s_.size()) return fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') {
      auto s = parse_string();
      if (!s.ok()) return s.error();
      return Value::string(std::move(s).value());
    }
    if (consume("true")) return Value::boolean(true);
    if (consume("false")) return Value::boolean(false);
    if (consume("null")) return Value::none();
    // Python's json accepts these non-standard constants; so do we.
    if (consume("NaN")) return Value::floating(std::numeric_limits<double>::quiet_NaN());
    if (consume("Infinity")) return Value::floating(std::numeric_limits<double>::infinity());
    if (consume("-Infinity")) return Value::floating(-std::numeric_limits<double>::infinity());
    return parse_number();
  }

  Result<Value> parse_number() {
    const size_t start = pos_;
    bool is_float = false;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    const size_t digits_start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == digits_start) return fail("invalid value");
    if (s_[digits_start] == '0' && pos_ - digits_start > 1) return fail("leading zero");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      const size_t frac = ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == frac) return fail("digit expected after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      const size_t exp = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == exp) return fail("digit expected in exponent");
    }
    const std::string text(s_.substr(start, pos_ - start));
    if (!is_float) {
      int64_t i = 0;
      auto res = std::from_chars(text.data(), text.data() + text.size(), i);
      if (res.ec == std::errc() && res.ptr == text.data() + text.size()) return Value::integer(i);
    }
    // Integers beyond 64 bits degrade to float (Python would keep them exact).
    return Value::floating(std::strtod(text.c_str(), nullptr));
  }

  Result<uint32_t> parse_hex4() {
    if (pos_ + 4 > s_.size()) return fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<uint32_t>(h - 'A' + 10);
      else return fail("bad \\u escape");
    }
    return v;
  }

  Result<uint32_t> parse_unicode_escape() {
    auto hi = parse_hex4();
    if (!hi.ok() || *hi < 0xD800 || *hi > 0xDBFF) return hi;
    if (s_.substr(pos_, 2) != "\\u") return hi;  // lone surrogate, kept as is
    const size_t save = pos_;
    pos_ += 2;
    auto lo = parse_hex4();
    if (!lo.ok()) return lo;
    if (*lo < 0xDC00 || *lo > 0xDFFF) { pos_ = save; return hi; }
    return 0x10000 + ((*hi - 0xD800) << 10) + (*lo - 0xDC00);
  }

  Result<std::string> parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) return fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
      if (c != '\\') { out.push_back(c); continue; }
      if (pos_ >= s_.size()) return fail("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          auto cp = parse_unicode_escape();
          if (!cp.ok()) return cp.error();
          utf8::append(out, *cp);
          break;
        }
        default: return fail("invalid escape");
      }
    }
  }

  Result<Value> parse_array(int depth) {
    ++pos_;
    Value list = Value::list({});
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return list; }
    while (true) {
      auto item = parse_value(depth + 1);
      if (!item.ok()) return item;
      list.list_push(std::move(item).value());
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return list; }
      return fail("expected ',' or ']'");
    }
  }

  Result<Value> parse_object(int depth) {
    ++pos_;
    Value dict = Value::dict();
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return dict; }
    while (true) {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("expected string key");
      auto key = parse_string();
      if (!key.ok()) return key.error();
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      auto value = parse_value(depth + 1);
      if (!value.ok()) return value;
      dict.dict_set(std::move(key).value(), std::move(value).value());
      skip_space();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return dict; }
      return fail("expected ',' or '}'");
    }
  }
};

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  char buf[16];
  for (uint32_t cp : utf8::decode(s)) {
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
    } else {
      utf8::append(out, cp);
    }
  }
  out.push_back('"');
}

std::string json_float(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  return float_repr(f);
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& o) : opt_(o) {}
  std::string out;

  Status write(const Value& v, int depth) {
    if (depth > kMaxJsonDepth) return make_error("tojson: nesting too deep");
    switch (v.kind()) {
      case Kind::kNone: out += "null"; return Ok{};
      case Kind::kBool: out += v.as_bool() ? "true" : "false"; return Ok{};
      case Kind::kInt: out += std::to_string(v.as_int()); return Ok{};
      case Kind::kFloat: out += json_float(v.as_double()); return Ok{};
      case Kind::kString: append_json_string(out, v.as_string(), opt_.ensure_ascii); return Ok{};
      case Kind::kList: return write_list(v, depth);
      case Kind::kDict:
        if (!v.is_namespace()) return write_dict(v, depth);
        [[fallthrough]];
      default:
        return make_error("Object of type " + type_name(v) + " is not JSON serializable");
    }
  }

 private:
  const JsonDumpOptions& opt_;

  void newline(int depth) {
    if (!opt_.indent) return;
    out.push_back('\n');
    for (int i = 0; i < depth; ++i) out += *opt_.indent;
  }

  Status write_list(const Value& v, int depth) {
    if (v.items().empty()) { out += "[]"; return Ok{}; }
    out.push_back('[');
    for (size_t i = 0; i < v.items().size(); ++i) {
      if (i) out += opt_.item_separator;
      newline(depth + 1);
      CHORUS_TRY(write(v.items()[i], depth + 1));
    }
    newline(depth);
    out.push_back(']');
    return Ok{};
  }

  static Result<std::string> key_text(const Value& key) {
    switch (key.kind()) {
      case Kind::kString: return key.as_string();
      case Kind::kBool: return std::string(key.as_bool() ? "true" : "false");
      case Kind::kInt: return std::to_string(key.as_int());
      case Kind::kFloat: return json_float(key.as_double());
      case Kind::kNone: return std::string("null");
      default:
        return make_error("keys must be str, int, float, bool or None, not " + type_name(key));
    }
  }

  Status write_dict(const Value& v, int depth) {
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : v.dict_data().entries) entries.push_back(&e);
    if (entries.empty()) { out += "{}"; return Ok{}; }
    if (opt_.sort_keys) CHORUS_TRY(sort_entries(entries));
    out.push_back('{');
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out += opt_.item_separator;
      newline(depth + 1);
      auto key = key_text(entries[i]->first);
      if (!key.ok()) return key.error();
      append_json_string(out, *key, opt_.ensure_ascii);
      out += opt_.key_separator;
      CHORUS_TRY(write(entries[i]->second, depth + 1));
    }
    newline(depth);
    out.push_back('}');
    return Ok{};
  }

  static Status sort_entries(std::vector<const std::pair<Value, Value>*>& entries) {
    std::optional<Error> error;
    std::stable_sort(entries.begin(), entries.end(), [&](auto* a, auto* b) {
      auto c = compare_values(a->first, b->first);
      if (!c.ok()) { if (!error) error = c.error(); return false; }
      return *c < 0;
    });
    if (error) return *error;
    return Ok{};
  }
};

}  // namespace

Result<Value> parse_json(std::string_view text) { return JsonParser(text).parse_document(); }

Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options) {
  JsonWriter writer(options);
  CHORUS_TRY(writer.write(value, 0));
  return std::move(writer.out);
}

}  // namespace chorus::chat
