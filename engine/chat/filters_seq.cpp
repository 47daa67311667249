// Filters on sequences and mappings: length, first/last, join, sort, unique, map,
// select/reject(attr), dictsort, items, sum/min/max, batch.
#include <algorithm>

#include "engine/chat/filters.h"
#include "engine/chat/interpreter.h"
#include "engine/chat/utf8.h"
#include "engine/chat/value_ops.h"

namespace chorus::chat {
namespace {

const Value* arg(const CallArgs& args, const char* name, size_t index) { return args.find(name, index); }

// CallArgs without the first `n` positionals (for map/select that forward the rest).
CallArgs drop_positional(const CallArgs& args, size_t n, std::initializer_list<const char*> drop_keys = {}) {
  CallArgs rest;
  for (size_t i = n; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  for (const auto& kw : args.keyword) {
    bool drop = false;
    for (const char* k : drop_keys) drop |= kw.first == k;
    if (!drop) rest.keyword.push_back(kw);
  }
  return rest;
}

// Sort/unique/min/max keys: strings compare case-insensitively unless case_sensitive.
Value fold_case(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(utf8::lower(v.as_string()));
  return v;
}

Result<Value> f_length(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace()))
    return Value::integer(static_cast<int64_t>(v.length()));
  return make_error("object of type '" + type_name(v) + "' has no len()");
}

Result<Value> f_list(Interpreter&, const Value& v, const CallArgs&) {
  auto items = iterate(v);
  if (!items.ok()) return items.error();
  return Value::list(std::move(items).value());
}

Result<Value> f_first(Interpreter&, const Value& v, const CallArgs&) {
  auto items = iterate(v);
  if (!items.ok()) return items.error();
  if (items->empty()) return Value::undefined("No first item, sequence was empty.");
  return items->front();
}

Result<Value> f_last(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_iterator()) return make_error("'generator' object is not reversible");
  auto items = iterate(v);
  if (!items.ok()) return items.error();
  if (items->empty()) return Value::undefined("No last item, sequence was empty.");
  return items->back();
}

Result<Value> f_reverse(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_string()) {
    auto cps = utf8::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value::string(utf8::encode(cps));
  }
  auto items = iterate(v);
  if (!items.ok()) return make_error("argument must be iterable");
  std::reverse(items->begin(), items->end());
  // reversed() of a list or dict is an iterator; a generator gets materialised to a list.
  return v.is_iterator() ? Value::list(std::move(items).value()) : Value::iterator(std::move(items).value());
}

// Items mapped through `attribute=` (dotted path) when given.
Result<std::vector<Value>> keyed_items(const Value& v, const Value* attribute, std::vector<Value>* keys) {
  auto items = iterate(v);
  if (!items.ok()) return items.error();
  for (const Value& item : *items) {
    if (attribute && !attribute->is_none()) {
      auto key = get_attribute_path(item, *attribute);
      if (!key.ok()) return key.error();
      keys->push_back(std::move(key).value());
    } else {
      keys->push_back(item);
    }
  }
  return items;
}

Result<Value> f_join(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* sep = arg(args, "d", 0);
  const Value* attribute = arg(args, "attribute", 1);
  std::vector<Value> keys;
  auto items = keyed_items(v, attribute, &keys);
  if (!items.ok()) return items.error();
  const std::string separator = sep ? soft_str(*sep) : "";
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) out += separator;
    out += soft_str(keys[i]);
    CHORUS_TRY(in.check_size(out.size()));
  }
  return Value::string(std::move(out));
}

Result<Value> f_sort(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* reverse = arg(args, "reverse", 0);
  const Value* case_sensitive = arg(args, "case_sensitive", 1);
  const Value* attribute = arg(args, "attribute", 2);
  std::vector<Value> keys;
  auto items = keyed_items(v, attribute, &keys);
  if (!items.ok()) return items.error();
  const bool cs = case_sensitive && case_sensitive->truthy();
  std::vector<size_t> order(items->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (auto& k : keys) k = fold_case(k, cs);
  std::optional<Error> error;
  const bool descending = reverse && reverse->truthy();
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    auto c = compare_values(keys[a], keys[b]);
    if (!c.ok()) { if (!error) error = c.error(); return false; }
    return descending ? *c > 0 : *c < 0;
  });
  if (error) return *error;
  std::vector<Value> sorted;
  for (size_t i : order) sorted.push_back((*items)[i]);
  return Value::list(std::move(sorted));
}

Result<Value> f_unique(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* case_sensitive = arg(args, "case_sensitive", 0);
  const Value* attribute = arg(args, "attribute", 1);
  std::vector<Value> keys;
  auto items = keyed_items(v, attribute, &keys);
  if (!items.ok()) return items.error();
  std::vector<Value> seen, out;
  for (size_t i = 0; i < items->size(); ++i) {
    Value key = fold_case(keys[i], case_sensitive && case_sensitive->truthy());
    bool dup = false;
    for (const Value& s : seen) dup |= values_equal(s, key);
    if (dup) continue;
    seen.push_back(std::move(key));
    out.push_back((*items)[i]);
  }
  return Value::iterator(std::move(out));
}

Result<Value> min_max(const Value& v, const CallArgs& args, bool want_max) {
  const Value* case_sensitive = arg(args, "case_sensitive", 0);
  const Value* attribute = arg(args, "attribute", 1);
  std::vector<Value> keys;
  auto items = keyed_items(v, attribute, &keys);
  if (!items.ok()) return items.error();
  if (items->empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  const bool cs = case_sensitive && case_sensitive->truthy();
  for (size_t i = 1; i < items->size(); ++i) {
    auto c = compare_values(fold_case(keys[i], cs), fold_case(keys[best], cs));
    if (!c.ok()) return c.error();
    if (want_max ? *c > 0 : *c < 0) best = i;
  }
  return (*items)[best];
}
Result<Value> f_min(Interpreter&, const Value& v, const CallArgs& args) { return min_max(v, args, false); }
Result<Value> f_max(Interpreter&, const Value& v, const CallArgs& args) { return min_max(v, args, true); }

Result<Value> f_sum(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* attribute = arg(args, "attribute", 0);
  const Value* start = arg(args, "start", 1);
  std::vector<Value> keys;
  auto items = keyed_items(v, attribute, &keys);
  if (!items.ok()) return items.error();
  Value total = start ? *start : Value::integer(0);
  for (const Value& k : keys) {
    auto next = binary_op(BinaryOp::kAdd, total, k, in.options().max_output_bytes);
    if (!next.ok()) return next.error();
    total = std::move(next).value();
  }
  return total;
}

Result<Value> f_map(Interpreter& in, const Value& v, const CallArgs& args) {
  if (!v.truthy()) return Value::iterator({});  // jinja2 skips falsy input (e.g. none) entirely
  auto items = iterate(v);
  if (!items.ok()) return items.error();
  const Value* attribute = args.find("attribute", static_cast<size_t>(-1));
  std::vector<Value> out;
  if (attribute) {
    const Value* fallback = args.find("default", static_cast<size_t>(-1));
    for (const Value& item : *items) {
      auto mapped = get_attribute_path(item, *attribute);
      if (!mapped.ok()) return mapped.error();
      out.push_back(mapped->is_undefined() && fallback ? *fallback : std::move(mapped).value());
    }
    return Value::iterator(std::move(out));
  }
  if (args.positional.empty()) return make_error("map requires a filter argument");
  const std::string filter = soft_str(args.positional[0]);
  const CallArgs rest = drop_positional(args, 1);
  for (const Value& item : *items) {
    CHORUS_TRY(in.step());
    auto mapped = in.apply_filter(filter, item, rest);
    if (!mapped.ok()) return mapped.error();
    out.push_back(std::move(mapped).value());
  }
  return Value::iterator(std::move(out));
}

// select/reject/selectattr/rejectattr share one loop.
Result<Value> select_common(Interpreter& in, const Value& v, const CallArgs& args, bool by_attribute, bool keep_when) {
  if (!v.truthy()) return Value::iterator({});  // jinja2 skips falsy input (e.g. none) entirely
  auto items = iterate(v);
  if (!items.ok()) return items.error();
  size_t next_arg = 0;
  const Value* attribute = nullptr;
  if (by_attribute) {
    if (args.positional.empty()) return make_error("selectattr/rejectattr need an attribute name");
    attribute = &args.positional[next_arg++];
  }
  std::optional<std::string> test;
  if (next_arg < args.positional.size()) test = soft_str(args.positional[next_arg++]);
  const CallArgs rest = drop_positional(args, next_arg);
  std::vector<Value> out;
  for (const Value& item : *items) {
    CHORUS_TRY(in.step());
    Value subject = item;
    if (attribute) {
      auto a = get_attribute_path(item, *attribute);
      if (!a.ok()) return a.error();
      subject = std::move(a).value();
    }
    bool passed = subject.truthy();
    if (test) {
      auto t = in.apply_test(*test, subject, rest);
      if (!t.ok()) return t.error();
      passed = *t;
    }
    if (passed == keep_when) out.push_back(item);
  }
  return Value::iterator(std::move(out));
}
Result<Value> f_select(Interpreter& in, const Value& v, const CallArgs& a) { return select_common(in, v, a, false, true); }
Result<Value> f_reject(Interpreter& in, const Value& v, const CallArgs& a) { return select_common(in, v, a, false, false); }
Result<Value> f_selectattr(Interpreter& in, const Value& v, const CallArgs& a) { return select_common(in, v, a, true, true); }
Result<Value> f_rejectattr(Interpreter& in, const Value& v, const CallArgs& a) { return select_common(in, v, a, true, false); }

Result<Value> f_items(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::iterator({});
  if (!v.is_dict() || v.is_namespace()) return make_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict_data().entries) out.push_back(Value::tuple({k, val}));
  return Value::iterator(std::move(out));
}

Result<Value> f_dictsort(Interpreter&, const Value& v, const CallArgs& args) {
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_dict() || v.is_namespace()) return make_error("dictsort requires a mapping");
  const Value* case_sensitive = arg(args, "case_sensitive", 0);
  const Value* by = arg(args, "by", 1);
  const Value* reverse = arg(args, "reverse", 2);
  const bool by_value = by && soft_str(*by) == "value";
  if (by && !by_value && soft_str(*by) != "key") return make_error("You can only sort by either \"key\" or \"value\"");
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.dict_data().entries) pairs.push_back(Value::tuple({k, val}));
  const bool cs = case_sensitive && case_sensitive->truthy();
  const bool descending = reverse && reverse->truthy();
  std::optional<Error> error;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    const size_t i = by_value ? 1 : 0;
    auto c = compare_values(fold_case(a.items()[i], cs), fold_case(b.items()[i], cs));
    if (!c.ok()) { if (!error) error = c.error(); return false; }
    return descending ? *c > 0 : *c < 0;
  });
  if (error) return *error;
  return Value::list(std::move(pairs));
}

Result<Value> f_batch(Interpreter& in, const Value& v, const CallArgs& args) {
  const Value* count_v = arg(args, "linecount", 0);
  const Value* fill = arg(args, "fill_with", 1);
  if (!count_v || !count_v->is_int() || count_v->as_int() <= 0) return make_error("batch size must be a positive integer");
  const size_t n = static_cast<size_t>(count_v->as_int());
  auto items = iterate(v);
  if (!items.ok()) return items.error();
  std::vector<Value> out, current;
  for (const Value& item : *items) {
    current.push_back(item);
    if (current.size() == n) { out.push_back(Value::list(std::move(current))); current.clear(); }
  }
  if (!current.empty()) {
    if (fill && !fill->is_none()) {
      CHORUS_TRY(in.check_size(n));
      while (current.size() < n) current.push_back(*fill);
    }
    out.push_back(Value::list(std::move(current)));
  }
  return Value::iterator(std::move(out));
}

Result<Value> f_attr(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* name = arg(args, "name", 0);
  if (!name) return make_error("attr() needs a name");
  const std::string n = soft_str(*name);
  if (v.is_namespace()) {
    if (const Value* found = v.dict_data().find(n)) return *found;
  } else {
    Value method = bound_method(v, n);
    if (!method.is_undefined() || !method.undefined_hint().empty()) return method;
  }
  return Value::undefined("'" + type_name(v) + " object' has no attribute '" + n + "'");
}

}  // namespace

Result<Value> get_attribute_path(const Value& item, const Value& path) {
  if (path.is_int()) return get_item(item, path);
  const std::string text = soft_str(path);
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    const std::string part = text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = 0;
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                         parse_python_int(part, 10, &index);
    auto next = get_item(current, numeric ? Value::integer(index) : Value::string(part));
    if (!next.ok()) return next;
    current = std::move(next).value();
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

void add_sequence_filters(FilterTable& t) {
  t["length"] = f_length;
  t["count"] = f_length;
  t["list"] = f_list;
  t["first"] = f_first;
  t["last"] = f_last;
  t["reverse"] = f_reverse;
  t["join"] = f_join;
  t["sort"] = f_sort;
  t["unique"] = f_unique;
  t["min"] = f_min;
  t["max"] = f_max;
  t["sum"] = f_sum;
  t["map"] = f_map;
  t["select"] = f_select;
  t["reject"] = f_reject;
  t["selectattr"] = f_selectattr;
  t["rejectattr"] = f_rejectattr;
  t["items"] = f_items;
  t["dictsort"] = f_dictsort;
  t["batch"] = f_batch;
  t["attr"] = f_attr;
}

}  // namespace chorus::chat
