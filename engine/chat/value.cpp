#include "engine/chat/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/chat/utf8.h"

namespace chorus::chat {

const Value* CallArgs::find(std::string_view name, size_t index) const {
  for (const auto& [key, value] : keyword)
    if (key == name) return &value;
  if (index < positional.size()) return &positional[index];
  return nullptr;
}

const Value* DictData::find(const Value& key) const {
  for (const auto& entry : entries)
    if (values_equal(entry.first, key)) return &entry.second;
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& entry : entries)
    if (entry.first.is_string() && entry.first.as_string() == key) return &entry.second;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  for (auto& entry : entries) {
    if (values_equal(entry.first, key)) {
      entry.second = std::move(value);  // Python keeps the original key position
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

void DictData::append_new(Value key, Value value) {
  entries.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.str_ = std::move(hint);
  return v;
}
Value Value::none() { Value v; v.kind_ = Kind::kNone; return v; }
Value Value::boolean(bool b) { Value v; v.kind_ = Kind::kBool; v.b_ = b; return v; }
Value Value::integer(int64_t i) { Value v; v.kind_ = Kind::kInt; v.i_ = i; return v; }
Value Value::floating(double f) { Value v; v.kind_ = Kind::kFloat; v.f_ = f; return v; }
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.str_ = std::move(s);
  return v;
}
Value Value::markup(std::string s) {
  Value v = string(std::move(s));
  v.b_ = true;
  return v;
}

Value Value::iterator(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kIterator;
  return v;
}

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ListData>();
  v.list_->items = std::move(items);
  return v;
}
Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.list_->is_tuple = true;
  return v;
}
Value Value::dict() {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<DictData>();
  return v;
}
Value Value::namespace_object() {
  Value v = dict();
  v.dict_->is_namespace = true;
  return v;
}
Value Value::callable(std::shared_ptr<const Callable> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.fn_ = std::move(fn);
  return v;
}

void Value::dict_set(std::string key, Value value) {
  dict_->set(Value::string(std::move(key)), std::move(value));
}

const void* Value::identity() const {
  if (list_) return list_.get();
  if (dict_) return dict_.get();
  if (fn_) return fn_.get();
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined: case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0.0;
    case Kind::kString: return !str_.empty();
    case Kind::kList: return !list_->items.empty();
    case Kind::kDict: return dict_->is_namespace || !dict_->entries.empty();
    case Kind::kCallable: case Kind::kIterator: return true;
  }
  return false;
}

size_t Value::length() const {
  switch (kind_) {
    case Kind::kString: return utf8::length(str_);
    case Kind::kList: return list_->items.size();
    case Kind::kDict: return dict_->entries.size();
    default: return 0;
  }
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined: case Kind::kNone: return true;
    case Kind::kString: return a.as_string() == b.as_string();
    case Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!values_equal(a.items()[i], b.items()[i])) return false;
      return true;
    }
    case Kind::kDict: {
      if (a.is_namespace() || b.is_namespace()) return a.identity() == b.identity();
      const auto& ea = a.dict_data().entries;
      if (ea.size() != b.dict_data().entries.size()) return false;
      for (const auto& [key, value] : ea) {
        const Value* other = b.dict_data().find(key);
        if (!other || !values_equal(value, *other)) return false;
      }
      return true;
    }
    case Kind::kCallable: case Kind::kIterator: return a.identity() == b.identity();
    default: return false;
  }
}

Result<int> compare_values(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());  // UTF-8 order == code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const size_t n = std::min(a.items().size(), b.items().size());
    for (size_t i = 0; i < n; ++i) {
      if (values_equal(a.items()[i], b.items()[i])) continue;
      return compare_values(a.items()[i], b.items()[i]);
    }
    const size_t na = a.items().size(), nb = b.items().size();
    return na < nb ? -1 : (na > nb ? 1 : 0);
  }
  return make_error("'<' not supported between instances of '" + type_name(a) + "' and '" +
                    type_name(b) + "'");
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // shortest round-trip digits: "-1.2345e+02"
  const size_t e_pos = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string sign = sci[0] == '-' ? "-" : "";
  std::string digits;
  for (size_t i = sign.size(); i < e_pos; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
  // Python's repr switches to exponent notation outside 1e-4 <= |f| < 1e16.
  if (exponent < -4 || exponent >= 16) {
    std::string mant = digits.substr(0, 1);
    if (digits.size() > 1) mant += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return sign + mant + ebuf;
  }
  if (exponent < 0) return sign + "0." + std::string(-exponent - 1, '0') + digits;
  const size_t int_len = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_len) return sign + digits + std::string(int_len - digits.size(), '0') + ".0";
  return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

namespace {

void append_string_repr(std::string& out, const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  out.push_back(quote);
  char buf[16];
  for (uint32_t cp : utf8::decode(s)) {
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') { out.push_back('\\'); out.push_back(static_cast<char>(cp)); }
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0x2028 || cp == 0x2029) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
    } else {
      utf8::append(out, cp);
    }
  }
  out.push_back(quote);
}

void append_repr(std::string& out, const Value& v);

void append_items(std::string& out, const Value& v) {
  const char* open = v.is_tuple() ? "(" : "[";
  out += open;
  for (size_t i = 0; i < v.items().size(); ++i) {
    if (i) out += ", ";
    append_repr(out, v.items()[i]);
  }
  if (v.is_tuple() && v.items().size() == 1) out += ",";
  out += v.is_tuple() ? ")" : "]";
}

void append_dict(std::string& out, const Value& v) {
  if (v.is_namespace()) out += "<Namespace ";
  out += "{";
  bool first = true;
  for (const auto& [key, value] : v.dict_data().entries) {
    if (!first) out += ", ";
    first = false;
    append_repr(out, key);
    out += ": ";
    append_repr(out, value);
  }
  out += "}";
  if (v.is_namespace()) out += ">";
}

void append_repr(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kString: append_string_repr(out, v.as_string()); return;
    case Kind::kList: append_items(out, v); return;
    case Kind::kDict: append_dict(out, v); return;
    case Kind::kUndefined: return;
    default: out += to_str(v); return;
  }
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return v.as_bool() ? "True" : "False";
    case Kind::kInt: return std::to_string(v.as_int());
    case Kind::kFloat: return float_repr(v.as_double());
    case Kind::kString: return v.as_string();
    case Kind::kCallable: return "<function " + v.callable_ref().name() + ">";
    case Kind::kIterator: return "<generator object>";
    default: return to_repr(v);
  }
}

std::string to_repr(const Value& v) {
  std::string out;
  append_repr(out, v);
  return out;
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return v.is_tuple() ? "tuple" : "list";
    case Kind::kDict: return v.is_namespace() ? "Namespace" : "dict";
    case Kind::kCallable: return "function";
    case Kind::kIterator: return "generator";
  }
  return "object";
}

}  // namespace chorus::chat
