#include "engine/chat/value_ops.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "engine/chat/utf8.h"

namespace chorus::chat {
namespace {

std::string object_name(const Value& v) { return type_name(v) + " object"; }

Value missing_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_name(obj) + "' has no attribute '" + name + "'");
}

Error type_error(const char* op, const Value& a, const Value& b) {
  return make_error(std::string("unsupported operand type(s) for ") + op + ": '" + type_name(a) +
                    "' and '" + type_name(b) + "'");
}

// Python index normalisation: negative counts from the end; nullopt when out of range.
std::optional<size_t> normalize_index(int64_t index, size_t size) {
  const int64_t n = static_cast<int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return static_cast<size_t>(index);
}

// Python slice.indices(): clamps start/stop for the given step direction.
void slice_bounds(const Value& start, const Value& stop, int64_t step, int64_t size,
                  int64_t* lo, int64_t* hi) {
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (!v.is_int()) return dflt;
    int64_t i = v.as_int();
    if (i < 0) i = std::max<int64_t>(i + size, step < 0 ? -1 : 0);
    else i = std::min<int64_t>(i, step < 0 ? size - 1 : size);
    return i;
  };
  *lo = clamp(start, step < 0 ? size - 1 : 0);
  *hi = clamp(stop, step < 0 ? -1 : size);
}

Result<Value> repeat(const Value& seq, int64_t count, size_t max_size) {
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.items().size();
  // An empty unit repeats to empty at any count; looping `count` times would let '' * 10**12 hang.
  if (count <= 0 || unit == 0) return seq.is_string() ? Value::string("") : (seq.is_tuple() ? Value::tuple({}) : Value::list({}));
  if (static_cast<uint64_t>(count) > max_size / unit) return make_error("result of '*' is too large");
  if (seq.is_string()) {
    std::string out;
    out.reserve(unit * static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) out += seq.as_string();
    return Value::string(std::move(out));
  }
  std::vector<Value> items;
  for (int64_t i = 0; i < count; ++i) items.insert(items.end(), seq.items().begin(), seq.items().end());
  return seq.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Result<Value> int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) return make_error("integer overflow in '**'");
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return make_error("integer overflow in '**'");
  }
  return Value::integer(result);
}

Result<Value> int_arith(BinaryOp op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case BinaryOp::kAdd: if (__builtin_add_overflow(a, b, &r)) break; return Value::integer(r);
    case BinaryOp::kSub: if (__builtin_sub_overflow(a, b, &r)) break; return Value::integer(r);
    case BinaryOp::kMul: if (__builtin_mul_overflow(a, b, &r)) break; return Value::integer(r);
    case BinaryOp::kDiv:
      if (b == 0) return make_error("division by zero");
      return Value::floating(static_cast<double>(a) / static_cast<double>(b));
    case BinaryOp::kFloorDiv: case BinaryOp::kMod: {
      if (b == 0) return make_error("integer division or modulo by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) break;
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) { q -= 1; m += b; }
      return Value::integer(op == BinaryOp::kFloorDiv ? q : m);
    }
    case BinaryOp::kPow:
      if (b < 0) {
        if (a == 0) return make_error("0.0 cannot be raised to a negative power");
        return Value::floating(std::pow(static_cast<double>(a), static_cast<double>(b)));
      }
      return int_pow(a, b);
    default: break;
  }
  return make_error("integer overflow");
}

Result<Value> float_arith(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::kAdd: return Value::floating(a + b);
    case BinaryOp::kSub: return Value::floating(a - b);
    case BinaryOp::kMul: return Value::floating(a * b);
    case BinaryOp::kDiv:
      if (b == 0) return make_error("float division by zero");
      return Value::floating(a / b);
    case BinaryOp::kFloorDiv: case BinaryOp::kMod: {
      if (b == 0) return make_error("float divmod()");
      double m = std::fmod(a, b);
      if (m != 0 && ((m < 0) != (b < 0))) m += b;
      if (op == BinaryOp::kMod) return Value::floating(m);
      return Value::floating(std::floor(a / b));
    }
    case BinaryOp::kPow:
      if (a == 0 && b < 0) return make_error("0.0 cannot be raised to a negative power");
      if (a < 0 && b != std::floor(b)) return make_error("negative number cannot be raised to a fractional power");
      return Value::floating(std::pow(a, b));
    default: return make_error("bad operator");
  }
}

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kDiv: return "/";
    case BinaryOp::kFloorDiv: return "//";
    case BinaryOp::kMod: return "%";
    case BinaryOp::kPow: return "**";
    case BinaryOp::kConcat: return "~";
  }
  return "?";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

Error undefined_error(const Value& undefined) {
  return make_error(undefined.undefined_hint().empty() ? "value is undefined" : undefined.undefined_hint());
}

Result<Value> get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_namespace()) {
    if (const Value* v = obj.dict_data().find(name)) return *v;
    return missing_attribute(obj, name);
  }
  Value method = bound_method(obj, name);
  // A method, or the sandbox's "unsafe" Undefined for a mutating one, shadows dict keys.
  if (!method.is_undefined() || !method.undefined_hint().empty()) return method;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_data().find(name)) return *v;
  }
  return missing_attribute(obj, name);
}

Result<Value> get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_data().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && key.is_int()) {
    if (obj.is_list()) {
      if (auto i = normalize_index(key.as_int(), obj.items().size())) return obj.items()[*i];
    } else if (utf8::is_ascii(obj.as_string())) {
      if (auto i = normalize_index(key.as_int(), obj.as_string().size()))
        return Value::string(std::string(1, obj.as_string()[*i]));
    } else {
      auto cps = utf8::decode(obj.as_string());
      if (auto i = normalize_index(key.as_int(), cps.size())) return Value::string(utf8::encode({cps[*i]}));
    }
  }
  if (key.is_string()) return get_attribute(obj, key.as_string());
  if (obj.is_dict()) return Value::undefined("'dict object' has no attribute " + to_repr(key));
  return Value::undefined("'" + object_name(obj) + "' has no attribute " + to_repr(key));
}

Result<Value> slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step_v) {
  if (obj.is_undefined()) return undefined_error(obj);
  // An omitted bound arrives as a hint-less Undefined; anything else must be int or None.
  for (const Value* bound : {&start, &stop, &step_v}) {
    const bool omitted = bound->is_undefined() && bound->undefined_hint().empty();
    if (!omitted && !bound->is_int() && !bound->is_none())
      return make_error("slice indices must be integers or None or have an __index__ method");
  }
  if (!obj.is_list() && !obj.is_string()) return Value::undefined("'" + object_name(obj) + "' is not subscriptable");
  const int64_t step = step_v.is_int() ? step_v.as_int() : 1;
  if (step == 0) return make_error("slice step cannot be zero");
  std::vector<uint32_t> cps;
  const bool ascii = obj.is_string() && utf8::is_ascii(obj.as_string());
  if (obj.is_string() && !ascii) cps = utf8::decode(obj.as_string());
  const int64_t size = static_cast<int64_t>(obj.is_list() ? obj.items().size() : ascii ? obj.as_string().size() : cps.size());
  int64_t lo = 0, hi = 0;
  slice_bounds(start, stop, step, size, &lo, &hi);
  std::vector<Value> items;
  std::string text;
  std::vector<uint32_t> out_cps;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
    if (obj.is_list()) items.push_back(obj.items()[static_cast<size_t>(i)]);
    else if (ascii) text.push_back(obj.as_string()[static_cast<size_t>(i)]);
    else out_cps.push_back(cps[static_cast<size_t>(i)]);
  }
  if (obj.is_list()) return obj.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  return Value::string(ascii ? std::move(text) : utf8::encode(out_cps));
}

Result<Value> binary_op(BinaryOp op, const Value& a, const Value& b, size_t max_size) {
  if (op == BinaryOp::kConcat) {
    std::string s = to_str(a);
    s += to_str(b);
    if (s.size() > max_size) return make_error("string too large");
    return Value::string(std::move(s));
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return float_arith(op, a.as_double(), b.as_double());
    return int_arith(op, a.as_int(), b.as_int());
  }
  if (op == BinaryOp::kAdd && a.is_string() && b.is_string()) {
    if (a.as_string().size() + b.as_string().size() > max_size) return make_error("string too large");
    // Markup + str (either order) escapes the plain side, as markupsafe does.
    if (a.is_markup() != b.is_markup()) {
      return Value::markup(a.is_markup() ? a.as_string() + html_escape(b.as_string())
                                         : html_escape(a.as_string()) + b.as_string());
    }
    return a.is_markup() ? Value::markup(a.as_string() + b.as_string()) : Value::string(a.as_string() + b.as_string());
  }
  if (op == BinaryOp::kAdd && a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    if (a.items().size() + b.items().size() > max_size) return make_error("list too large");
    std::vector<Value> items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (op == BinaryOp::kMul && (a.is_string() || a.is_list()) && b.is_int()) return repeat(a, b.as_int(), max_size);
  if (op == BinaryOp::kMul && (b.is_string() || b.is_list()) && a.is_int()) return repeat(b, a.as_int(), max_size);
  if (op == BinaryOp::kMod && a.is_string()) {
    auto s = percent_format(a.as_string(), b);
    if (!s.ok()) return s.error();
    if (s->size() > max_size) return make_error("string too large");
    return Value::string(std::move(s).value());
  }
  return type_error(op_symbol(op), a, b);
}

Result<bool> contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;  // jinja2's Undefined iterates as empty
  if (container.is_string()) {
    if (!item.is_string())
      return make_error("'in <string>' requires string as left operand, not " + type_name(item));
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list() || container.is_iterator()) {
    for (const Value& v : container.items()) if (values_equal(v, item)) return true;
    return false;
  }
  if (container.is_dict()) return container.dict_data().find(item) != nullptr;
  return make_error("argument of type '" + type_name(container) + "' is not iterable");
}

Result<std::vector<Value>> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return std::vector<Value>{};
    case Kind::kList: case Kind::kIterator: return v.items();
    case Kind::kDict: {
      if (v.is_namespace()) break;
      std::vector<Value> keys;
      for (const auto& entry : v.dict_data().entries) keys.push_back(entry.first);
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      for (uint32_t cp : utf8::decode(v.as_string())) chars.push_back(Value::string(utf8::encode({cp})));
      return chars;
    }
    default: break;
  }
  return make_error("'" + type_name(v) + "' object is not iterable");
}

namespace {

std::string trim_ascii(const std::string& text) {
  size_t b = 0, e = text.size();
  while (b < e && utf8::is_space(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && utf8::is_space(static_cast<unsigned char>(text[e - 1]))) --e;
  return text.substr(b, e - b);
}

}  // namespace

bool parse_python_int(const std::string& text, int base, int64_t* out) {
  std::string s = trim_ascii(text);
  std::string digits;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) digits.push_back(s[i++]);
  if (base == 16 && s.size() > i + 1 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) i += 2;
  bool prev_digit = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && prev_digit && i + 1 < s.size() && s[i + 1] != '_') { prev_digit = false; continue; }
    if (!std::isalnum(static_cast<unsigned char>(s[i]))) return false;
    digits.push_back(s[i]);
    prev_digit = true;
  }
  if (digits.empty() || digits == "+" || digits == "-" || base < 2 || base > 36) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_python_float(const std::string& text, double* out) {
  std::string s = trim_ascii(text);
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos) return false;
  std::string no_underscores;
  for (char c : s) if (c != '_') no_underscores.push_back(c);
  char* end = nullptr;
  const double v = std::strtod(no_underscores.c_str(), &end);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace chorus::chat
