// Python methods of str, dict and list that templates call (`content.strip()`,
// `message.get('x')`). The immutable sandbox forbids the mutating ones.
#include <algorithm>
#include <cstring>

#include "engine/chat/interpreter.h"
#include "engine/chat/str_ops.h"
#include "engine/chat/string_format.h"
#include "engine/chat/utf8.h"
#include "engine/chat/value_ops.h"

namespace chorus::chat {
namespace {

Value strings_to_list(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::string(p));
  return Value::list(std::move(items));
}

// Optional string argument: absent or None means "not given".
Result<std::optional<std::string>> opt_string(const CallArgs& args, const char* name, size_t index) {
  const Value* v = args.find(name, index);
  if (!v || v->is_none()) return std::optional<std::string>{};
  if (!v->is_string()) return make_error(std::string(name) + " must be None or str, not " + type_name(*v));
  return std::optional<std::string>(v->as_string());
}

Result<std::string> req_string(const CallArgs& args, const char* name, size_t index) {
  const Value* v = args.find(name, index);
  if (!v) return make_error(std::string("missing required argument '") + name + "'");
  if (!v->is_string()) return make_error(std::string("argument '") + name + "' must be str, not " + type_name(*v));
  return v->as_string();
}

int64_t opt_int(const CallArgs& args, const char* name, size_t index, int64_t fallback) {
  const Value* v = args.find(name, index);
  return v && v->is_int() ? v->as_int() : fallback;
}

Result<Value> strip_method(const Value& self, const CallArgs& args, str_ops::StripSide side) {
  auto chars = opt_string(args, "chars", 0);
  if (!chars.ok()) return chars.error();
  return Value::string(str_ops::strip(self.as_string(), *chars, side));
}

Result<Value> split_method(const Value& self, const CallArgs& args, bool from_right) {
  auto sep = opt_string(args, "sep", 0);
  if (!sep.ok()) return sep.error();
  if (*sep && (*sep)->empty()) return make_error("empty separator");
  const int64_t max_split = opt_int(args, "maxsplit", 1, -1);
  return strings_to_list(from_right ? str_ops::rsplit(self.as_string(), *sep, max_split)
                                    : str_ops::split(self.as_string(), *sep, max_split));
}

// startswith/endswith accept a string or a tuple of strings.
Result<Value> affix_method(const Value& self, const CallArgs& args, bool at_end) {
  const Value* arg = args.find("prefix", 0);
  if (!arg) return make_error("startswith/endswith takes at least 1 argument");
  std::vector<Value> candidates = arg->is_list() ? arg->items() : std::vector<Value>{*arg};
  const std::string& s = self.as_string();
  for (const Value& c : candidates) {
    if (!c.is_string()) return make_error("startswith/endswith first arg must be str or a tuple of str");
    const std::string& a = c.as_string();
    if (a.size() > s.size()) continue;
    if (at_end ? s.compare(s.size() - a.size(), a.size(), a) == 0 : s.compare(0, a.size(), a) == 0)
      return Value::boolean(true);
  }
  return Value::boolean(false);
}

template <bool (*Pred)(uint32_t)>
Result<Value> all_chars(const Value& self, const CallArgs&) {
  const auto cps = utf8::decode(self.as_string());
  if (cps.empty()) return Value::boolean(false);
  for (uint32_t cp : cps) if (!Pred(cp)) return Value::boolean(false);
  return Value::boolean(true);
}

bool is_alnum_cp(uint32_t cp) { return utf8::is_alpha(cp) || utf8::is_digit(cp); }

Result<Value> case_test(const Value& self, bool want_upper) {
  bool any_cased = false;
  for (uint32_t cp : utf8::decode(self.as_string())) {
    if (want_upper ? utf8::is_lower(cp) && !utf8::is_upper(cp) : utf8::is_upper(cp)) return Value::boolean(false);
    any_cased |= utf8::is_upper(cp) || utf8::is_lower(cp);
  }
  return Value::boolean(any_cased);
}

Result<Value> join_method(const Value& self, const CallArgs& args) {
  const Value* iterable = args.find("iterable", 0);
  if (!iterable) return make_error("join() takes exactly one argument");
  auto items = iterate(*iterable);
  if (!items.ok()) return items.error();
  std::string out;
  for (size_t i = 0; i < items->size(); ++i) {
    const Value& item = (*items)[i];
    if (!item.is_string())
      return make_error("sequence item " + std::to_string(i) + ": expected str instance, " + type_name(item) + " found");
    if (i) out += self.as_string();
    out += item.as_string();
  }
  return Value::string(std::move(out));
}

Result<Value> pad_method(const Value& self, const CallArgs& args, int align) {
  const Value* width = args.find("width", 0);
  if (!width || !width->is_int()) return make_error("pad width must be an integer");
  auto fill = opt_string(args, "fillchar", 1);
  if (!fill.ok()) return fill.error();
  const std::string f = fill->value_or(" ");
  if (utf8::length(f) != 1) return make_error("The fill character must be exactly one character long");
  const int64_t w = std::min<int64_t>(width->as_int(), 1 << 24);
  return Value::string(str_ops::pad(self.as_string(), static_cast<size_t>(std::max<int64_t>(w, 0)), f, align));
}

Result<Value> partition_method(const Value& self, const CallArgs& args, bool from_right) {
  auto sep = req_string(args, "sep", 0);
  if (!sep.ok()) return sep.error();
  if (sep->empty()) return make_error("empty separator");
  const std::string& s = self.as_string();
  const size_t at = from_right ? s.rfind(*sep) : s.find(*sep);
  if (at == std::string::npos) {
    return from_right ? Value::tuple({Value::string(""), Value::string(""), self})
                      : Value::tuple({self, Value::string(""), Value::string("")});
  }
  return Value::tuple({Value::string(s.substr(0, at)), Value::string(*sep), Value::string(s.substr(at + sep->size()))});
}

Result<Value> str_method_more(const std::string& name, const Value& self, const CallArgs& args);

constexpr const char* kStrMethods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
    "replace", "upper", "lower", "title", "capitalize", "swapcase", "casefold", "find", "rfind",
    "index", "rindex", "count", "join", "format", "isdigit", "isdecimal", "isnumeric", "isalpha",
    "isalnum", "isspace", "isupper", "islower", "center", "ljust", "rjust", "zfill",
    "partition", "rpartition", "removeprefix", "removesuffix",
};

Result<Value> str_method(const std::string& name, const Value& self, const CallArgs& args) {
  const std::string& s = self.as_string();
  using str_ops::StripSide;
  if (name == "strip") return strip_method(self, args, StripSide::kBoth);
  if (name == "lstrip") return strip_method(self, args, StripSide::kLeft);
  if (name == "rstrip") return strip_method(self, args, StripSide::kRight);
  if (name == "split") return split_method(self, args, false);
  if (name == "rsplit") return split_method(self, args, true);
  if (name == "splitlines") {
    const Value* keep = args.find("keepends", 0);
    return strings_to_list(str_ops::splitlines(s, keep && keep->truthy()));
  }
  if (name == "startswith") return affix_method(self, args, false);
  if (name == "endswith") return affix_method(self, args, true);
  if (name == "replace") {
    auto old_text = req_string(args, "old", 0);
    if (!old_text.ok()) return old_text.error();
    auto new_text = req_string(args, "new", 1);
    if (!new_text.ok()) return new_text.error();
    return Value::string(str_ops::replace(s, *old_text, *new_text, opt_int(args, "count", 2, -1)));
  }
  if (name == "upper") return Value::string(utf8::upper(s));
  if (name == "lower" || name == "casefold") return Value::string(utf8::lower(s));
  if (name == "title") return Value::string(str_ops::python_title(s));
  if (name == "capitalize") return Value::string(str_ops::capitalize(s));
  if (name == "swapcase") return Value::string(str_ops::swapcase(s));
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    auto sub = req_string(args, "sub", 0);
    if (!sub.ok()) return sub.error();
    const int64_t at = str_ops::find(s, *sub, name[0] == 'r');
    if (at < 0 && name.find("index") != std::string::npos) return make_error("substring not found");
    return Value::integer(at);
  }
  if (name == "count") {
    auto sub = req_string(args, "sub", 0);
    if (!sub.ok()) return sub.error();
    return Value::integer(str_ops::count(s, *sub));
  }
  if (name == "join") return join_method(self, args);
  if (name == "format") {
    auto out = brace_format(s, args);
    if (!out.ok()) return out.error();
    return Value::string(std::move(out).value());
  }
  return str_method_more(name, self, args);
}

// The character-class predicates, padding and affix helpers of str.
Result<Value> str_method_more(const std::string& name, const Value& self, const CallArgs& args) {
  const std::string& s = self.as_string();
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return all_chars<utf8::is_digit>(self, args);
  if (name == "isalpha") return all_chars<utf8::is_alpha>(self, args);
  if (name == "isalnum") return all_chars<is_alnum_cp>(self, args);
  if (name == "isspace") return all_chars<utf8::is_space>(self, args);
  if (name == "isupper") return case_test(self, true);
  if (name == "islower") return case_test(self, false);
  if (name == "center") return pad_method(self, args, 0);
  if (name == "ljust") return pad_method(self, args, -1);
  if (name == "rjust") return pad_method(self, args, 1);
  if (name == "zfill") {
    const int64_t width = std::min<int64_t>(opt_int(args, "width", 0, 0), 1 << 24);
    const size_t len = utf8::length(s);
    if (width <= static_cast<int64_t>(len)) return self;
    const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
    const std::string zeros(static_cast<size_t>(width) - len, '0');
    return Value::string(sign ? s.substr(0, 1) + zeros + s.substr(1) : zeros + s);
  }
  if (name == "partition") return partition_method(self, args, false);
  if (name == "rpartition") return partition_method(self, args, true);
  if (name == "removeprefix" || name == "removesuffix") {
    auto affix = req_string(args, "affix", 0);
    if (!affix.ok()) return affix.error();
    const bool prefix = name == "removeprefix";
    if (affix->size() <= s.size() && (prefix ? s.compare(0, affix->size(), *affix) == 0
                                             : s.compare(s.size() - affix->size(), affix->size(), *affix) == 0))
      return Value::string(prefix ? s.substr(affix->size()) : s.substr(0, s.size() - affix->size()));
    return self;
  }
  return make_error("'str' object has no attribute '" + name + "'");
}

Result<Value> dict_method(const std::string& name, const Value& self, const CallArgs& args) {
  const auto& entries = self.dict_data().entries;
  if (name == "items" || name == "keys" || name == "values") {
    std::vector<Value> out;
    for (const auto& [k, v] : entries)
      out.push_back(name == "items" ? Value::tuple({k, v}) : name == "keys" ? k : v);
    return Value::list(std::move(out));
  }
  if (name == "get") {
    const Value* key = args.find("key", 0);
    if (!key) return make_error("get expected at least 1 argument, got 0");
    if (const Value* v = self.dict_data().find(*key)) return *v;
    const Value* fallback = args.find("default", 1);
    return fallback ? *fallback : Value::none();
  }
  if (name == "copy") {
    Value d = Value::dict();
    d.mutable_dict().entries = entries;
    return d;
  }
  return make_error("'dict' object has no attribute '" + name + "'");
}

Result<Value> list_method(const std::string& name, const Value& self, const CallArgs& args) {
  const Value* x = args.find("value", 0);
  if (name == "index" || name == "count") {
    if (!x) return make_error(name + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t i = 0; i < self.items().size(); ++i) {
      if (!values_equal(self.items()[i], *x)) continue;
      if (name == "index") return Value::integer(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") return make_error(to_repr(*x) + " is not in list");
    return Value::integer(n);
  }
  if (name == "copy") return Value::list(self.items());
  return make_error("'list' object has no attribute '" + name + "'");
}

template <Result<Value> (*Dispatch)(const std::string&, const Value&, const CallArgs&)>
class NamedMethod : public Callable {
 public:
  NamedMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  Result<Value> call(Interpreter&, const CallArgs& args) const override { return Dispatch(name_, self_, args); }
  std::string name() const override { return name_; }

 private:
  Value self_;
  std::string name_;
};

bool in_list(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names) if (name == n) return true;
  return false;
}

}  // namespace

Value bound_method(const Value& receiver, const std::string& name) {
  if (receiver.is_string()) {
    for (const char* m : kStrMethods)
      if (name == m) return Value::callable(std::make_shared<NamedMethod<str_method>>(receiver, name));
    return Value();
  }
  if (receiver.is_dict() && !receiver.is_namespace()) {
    if (in_list(name, {"items", "keys", "values", "get", "copy"}))
      return Value::callable(std::make_shared<NamedMethod<dict_method>>(receiver, name));
    if (in_list(name, {"pop", "popitem", "update", "setdefault", "clear"}))
      return Value::undefined("access to attribute '" + name + "' of 'dict' object is unsafe.");
    return Value();
  }
  if (receiver.is_list()) {
    if (in_list(name, {"index", "count"}) || (!receiver.is_tuple() && name == "copy"))
      return Value::callable(std::make_shared<NamedMethod<list_method>>(receiver, name));
    if (!receiver.is_tuple() && in_list(name, {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"}))
      return Value::undefined("access to attribute '" + name + "' of 'list' object is unsafe.");
  }
  return Value();
}

}  // namespace chorus::chat
