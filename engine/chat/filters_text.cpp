// Filters on strings and numbers, and the registry lookups.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/chat/filters.h"
#include "engine/chat/interpreter.h"
#include "engine/chat/parser.h"
#include "engine/chat/json.h"
#include "engine/chat/str_ops.h"
#include "engine/chat/utf8.h"
#include "engine/chat/value_ops.h"

namespace chorus::chat {
namespace {

const Value* arg(const CallArgs& args, const char* name, size_t index) { return args.find(name, index); }

Result<Value> f_upper(Interpreter&, const Value& v, const CallArgs&) { return Value::string(utf8::upper(soft_str(v))); }
Result<Value> f_lower(Interpreter&, const Value& v, const CallArgs&) { return Value::string(utf8::lower(soft_str(v))); }
Result<Value> f_capitalize(Interpreter&, const Value& v, const CallArgs&) {
  return Value::string(str_ops::capitalize(soft_str(v)));
}

// jinja2's title: words start after '-', whitespace or an opening bracket.
Result<Value> f_title(Interpreter&, const Value& v, const CallArgs&) {
  std::string out;
  bool word_start = true;
  for (uint32_t cp : utf8::decode(soft_str(v))) {
    const bool delimiter = cp == '-' || utf8::is_space(cp) || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (delimiter) { utf8::append(out, cp); word_start = true; continue; }
    utf8::append(out, word_start ? utf8::to_upper(cp) : utf8::to_lower(cp));
    word_start = false;
  }
  return Value::string(std::move(out));
}

Result<Value> f_trim(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* chars = arg(args, "chars", 0);
  std::optional<std::string> set;
  if (chars && !chars->is_none()) set = soft_str(*chars);
  return Value::string(str_ops::strip(soft_str(v), set, str_ops::StripSide::kBoth));
}

Result<Value> f_replace(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* old_text = arg(args, "old", 0);
  const Value* new_text = arg(args, "new", 1);
  if (!old_text || !new_text) return make_error("replace() needs old and new");
  const Value* count = arg(args, "count", 2);
  std::string out = str_ops::replace(soft_str(v), soft_str(*old_text), soft_str(*new_text),
                                     count && count->is_int() ? count->as_int() : -1);
  CHORUS_TRY(in.check_size(out.size()));
  return Value::string(std::move(out));
}

Result<Value> f_string(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() ? v : Value::string(soft_str(v));
}

Result<Value> f_safe(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_markup() ? v : Value::markup(soft_str(v));
}

Result<Value> f_escape(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_markup() ? v : Value::markup(html_escape(soft_str(v)));
}

Result<Value> f_forceescape(Interpreter&, const Value& v, const CallArgs&) {
  return Value::markup(html_escape(soft_str(v)));
}

Result<Value> f_pprint(Interpreter&, const Value& v, const CallArgs&) { return Value::string(to_repr(v)); }

Result<Value> f_center(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* width = arg(args, "width", 0);
  const int64_t w = width && width->is_int() ? width->as_int() : 80;
  CHORUS_TRY(in.check_size(static_cast<size_t>(std::max<int64_t>(w, 0))));
  return Value::string(str_ops::pad(soft_str(v), static_cast<size_t>(std::max<int64_t>(w, 0)), " ", 0));
}

Result<Value> f_indent(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* width = arg(args, "width", 0);
  const Value* first = arg(args, "first", 1);
  const Value* blank = arg(args, "blank", 2);
  std::string indention;
  if (width && width->is_string()) indention = width->as_string();
  else {
    const int64_t n = width && width->is_int() ? width->as_int() : 4;
    CHORUS_TRY(in.check_size(static_cast<size_t>(std::max<int64_t>(n, 0))));
    indention.assign(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
  }
  // jinja2 appends a newline first so that splitlines() keeps a trailing empty line.
  const auto lines = str_ops::splitlines(soft_str(v) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    const bool indent_line = i > 0 && (!lines[i].empty() || (blank && blank->truthy()));
    if (indent_line) out += indention;
    out += lines[i];
    CHORUS_TRY(in.check_size(out.size()));
  }
  if (first && first->truthy()) out = indention + out;
  return Value::string(std::move(out));
}

Result<Value> f_truncate(Interpreter&, const Value& v, const CallArgs& args) {
  const std::string s = soft_str(v);
  const Value* length_v = arg(args, "length", 0);
  const Value* killwords = arg(args, "killwords", 1);
  const Value* end_v = arg(args, "end", 2);
  const Value* leeway_v = arg(args, "leeway", 3);
  const int64_t length = length_v && length_v->is_int() ? length_v->as_int() : 255;
  const std::string end = end_v ? soft_str(*end_v) : "...";
  const int64_t leeway = leeway_v && leeway_v->is_int() ? leeway_v->as_int() : 5;
  auto cps = utf8::decode(s);
  if (static_cast<int64_t>(cps.size()) <= length + leeway) return Value::string(s);
  const int64_t keep = std::max<int64_t>(0, length - static_cast<int64_t>(utf8::length(end)));
  std::string head = utf8::encode(std::vector<uint32_t>(cps.begin(), cps.begin() + std::min<int64_t>(keep, static_cast<int64_t>(cps.size()))));
  if (!(killwords && killwords->truthy())) {
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head.resize(space);
  }
  return Value::string(head + end);
}

Result<Value> f_wordcount(Interpreter&, const Value& v, const CallArgs&) {
  int64_t n = 0;
  bool in_word = false;
  for (uint32_t cp : utf8::decode(soft_str(v))) {
    const bool word = utf8::is_alpha(cp) || utf8::is_digit(cp) || cp == '_';
    if (word && !in_word) ++n;
    in_word = word;
  }
  return Value::integer(n);
}

Result<Value> f_format(Interpreter&, const Value& v, const CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty())
    return make_error("can't handle positional and keyword arguments at the same time");
  Value format_args = Value::tuple(args.positional);
  if (!args.keyword.empty()) {
    format_args = Value::dict();
    for (const auto& [k, val] : args.keyword) format_args.dict_set(k, val);
  }
  auto out = percent_format(soft_str(v), format_args);
  if (!out.ok()) return out.error();
  return Value::string(std::move(out).value());
}

Result<Value> f_int(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* fallback = arg(args, "default", 0);
  const Value* base = arg(args, "base", 1);
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_int()) return Value::integer(v.as_int());
  if (v.is_float() && std::isfinite(v.as_double()) && std::fabs(v.as_double()) < 9.2e18)
    return Value::integer(static_cast<int64_t>(v.as_double()));
  if (v.is_string()) {
    int64_t i = 0;
    if (parse_python_int(v.as_string(), base && base->is_int() ? static_cast<int>(base->as_int()) : 10, &i))
      return Value::integer(i);
    double d = 0;
    if (parse_python_float(v.as_string(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(d));
  }
  return fallback ? *fallback : Value::integer(0);
}

Result<Value> f_float(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* fallback = arg(args, "default", 0);
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_number()) return Value::floating(v.as_double());
  double d = 0;
  if (v.is_string() && parse_python_float(v.as_string(), &d)) return Value::floating(d);
  return fallback ? *fallback : Value::floating(0.0);
}

Result<Value> f_abs(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_float()) return Value::floating(std::fabs(v.as_double()));
  if (v.is_int()) {
    if (v.as_int() == INT64_MIN) return make_error("integer overflow");
    return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_undefined()) return undefined_error(v);
  return make_error("bad operand type for abs(): '" + type_name(v) + "'");
}

Result<Value> f_round(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* precision_v = arg(args, "precision", 0);
  const Value* method_v = arg(args, "method", 1);
  const int64_t precision = precision_v && precision_v->is_int() ? precision_v->as_int() : 0;
  const std::string method = method_v ? soft_str(*method_v) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    return make_error("method must be 'common', 'ceil' or 'floor'");
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_number()) return make_error("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common" && v.is_int()) return Value::integer(v.as_int());
  const double x = v.as_double();
  if (method != "common") {
    const double scale = std::pow(10.0, static_cast<double>(precision));
    return Value::floating((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
  }
  if (!std::isfinite(x) || precision > 300 || precision < -300) return Value::floating(x);
  if (precision < 0) {
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::floating(std::nearbyint(x / scale) * scale);
  }
  // printf rounds the exact binary value half-to-even, as Python's round() does.
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);
  return Value::floating(std::strtod(buf, nullptr));
}

// Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Result<Value> f_tojson(Interpreter& in, const Value& v, const CallArgs& args) {
  JsonDumpOptions opt;
  const Value* ensure_ascii = arg(args, "ensure_ascii", 0);
  const Value* indent = arg(args, "indent", 1);
  const Value* separators = arg(args, "separators", 2);
  const Value* sort_keys = arg(args, "sort_keys", 3);
  opt.ensure_ascii = ensure_ascii && ensure_ascii->truthy();
  opt.sort_keys = sort_keys && sort_keys->truthy();
  if (indent && !indent->is_none()) {
    if (indent->is_string()) opt.indent = indent->as_string();
    else if (indent->is_int()) {
      CHORUS_TRY(in.check_size(static_cast<size_t>(std::max<int64_t>(indent->as_int(), 0))));
      opt.indent = std::string(static_cast<size_t>(std::max<int64_t>(indent->as_int(), 0)), ' ');
    } else return make_error("indent must be an int or a string");
    opt.item_separator = ",";
  }
  if (separators && !separators->is_none()) {
    if (!separators->is_list() || separators->items().size() != 2 || !separators->items()[0].is_string() ||
        !separators->items()[1].is_string())
      return make_error("separators must be a pair of strings");
    opt.item_separator = separators->items()[0].as_string();
    opt.key_separator = separators->items()[1].as_string();
  }
  auto text = dump_json(v, opt);
  if (!text.ok()) return text.error();
  CHORUS_TRY(in.check_size(text->size()));
  return Value::string(std::move(text).value());
}

Result<Value> f_default(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* fallback = arg(args, "default_value", 0);
  const Value* boolean = arg(args, "boolean", 1);
  const bool use_default = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
  if (!use_default) return v;
  return fallback ? *fallback : Value::string("");
}

// jinja2 built-ins not implemented here. They are still known names, so a template that
// mentions one in a branch it never takes renders as under jinja2; calling one is an error.
Result<Value> f_unsupported(Interpreter&, const Value&, const CallArgs&) {
  return make_error("this jinja2 filter is not supported by the chat template engine");
}

}  // namespace

void add_text_filters(FilterTable& t) {
  for (const char* name : {"groupby", "wordwrap", "urlize", "urlencode", "xmlattr", "random",
                           "filesizeformat", "striptags", "slice"})
    t[name] = f_unsupported;
  t["upper"] = f_upper;
  t["lower"] = f_lower;
  t["capitalize"] = f_capitalize;
  t["title"] = f_title;
  t["trim"] = f_trim;
  t["replace"] = f_replace;
  t["string"] = f_string;
  t["safe"] = f_safe;
  t["escape"] = f_escape;
  t["e"] = f_escape;
  t["forceescape"] = f_forceescape;
  t["pprint"] = f_pprint;
  t["center"] = f_center;
  t["indent"] = f_indent;
  t["truncate"] = f_truncate;
  t["wordcount"] = f_wordcount;
  t["format"] = f_format;
  t["int"] = f_int;
  t["float"] = f_float;
  t["abs"] = f_abs;
  t["round"] = f_round;
  t["tojson"] = f_tojson;
  t["default"] = f_default;
  t["d"] = f_default;
}

FilterFn find_filter(std::string_view name) {
  static const FilterTable table = [] {
    FilterTable t;
    add_text_filters(t);
    add_sequence_filters(t);
    return t;
  }();
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

TestFn find_test(std::string_view name) {
  static const TestTable table = [] {
    TestTable t;
    add_tests(t);
    return t;
  }();
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

bool is_known_filter(std::string_view name) { return find_filter(name) != nullptr; }
bool is_known_test(std::string_view name) { return find_test(name) != nullptr; }

Result<Value> Interpreter::apply_filter(const std::string& name, const Value& operand, const CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (!fn) return make_error("no filter named '" + name + "'");
  return fn(*this, operand, args);
}

Result<bool> Interpreter::apply_test(const std::string& name, const Value& operand, const CallArgs& args) {
  TestFn fn = find_test(name);
  if (!fn) return make_error("no test named '" + name + "'");
  return fn(*this, operand, args);
}

}  // namespace chorus::chat
