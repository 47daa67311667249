#pragma once
// The value model of the template interpreter: the Python objects a Hugging Face chat
// template sees (None, bool, int, float, str, list/tuple, dict, namespace, callables) plus
// jinja2's Undefined. Containers are shared by reference, as Python's are; only a
// namespace is ever mutated after construction (the sandbox forbids list/dict mutation).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/result.h"

namespace chorus::chat {

class Value;
class Interpreter;

// Arguments of a call as written at the call site: `f(a, b, key=c)`.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // Keyword `name`, else positional `index`, else nullptr (Python's argument binding).
  const Value* find(std::string_view name, size_t index) const;
};

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;  // only changes how it prints and compares
};

// A Python dict: keys keep insertion order. Lookups are linear; template dicts are small.
struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  bool is_namespace = false;  // jinja2 namespace(): the one object templates may assign to

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
  // For builders that know `key` is new: skips the duplicate scan.
  void append_new(Value key, Value value);
};

class Callable {
 public:
  virtual ~Callable() = default;
  virtual Result<Value> call(Interpreter& interp, const CallArgs& args) const = 0;
  virtual std::string name() const = 0;
};

// kIterator is what jinja2's generator-returning filters (map, select, unique, ...) give:
// iterable, always truthy, but with no len(), no indexing and no JSON form.
enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable, kIterator };

class Value {
 public:
  Value() = default;  // Undefined with no hint
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double f);
  static Value string(std::string s);
  // markupsafe.Markup (from `safe`/`escape`): `+` with a plain str HTML-escapes the str.
  static Value markup(std::string s);
  static Value iterator(std::vector<Value> items);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict();  // empty, ready for dict_set()
  static Value namespace_object();
  static Value callable(std::shared_ptr<const Callable> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt || kind_ == Kind::kBool; }  // bool is an int
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return is_string() && b_; }
  bool is_iterator() const { return kind_ == Kind::kIterator; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return is_list() && list_->is_tuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return is_dict() && dict_->is_namespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_double() const { return is_float() ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return str_; }  // also the Undefined hint
  const std::vector<Value>& items() const { return list_->items; }  // list, tuple or iterator
  const DictData& dict_data() const { return *dict_; }
  DictData& mutable_dict() { return *dict_; }  // builders and namespace assignment only
  const Callable& callable_ref() const { return *fn_; }
  const std::string& undefined_hint() const { return str_; }

  void dict_set(std::string key, Value value);
  void list_push(Value item) { list_->items.push_back(std::move(item)); }
  // Identity of a shared container (for `is sameas` and callables).
  const void* identity() const;

  bool truthy() const;  // Python bool()
  size_t length() const;  // len(); strings count code points

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::string str_;
  std::shared_ptr<ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<const Callable> fn_;
};

// Python == and the ordering used by sort/min/max (an Error for incomparable types).
bool values_equal(const Value& a, const Value& b);
Result<int> compare_values(const Value& a, const Value& b);

// Python repr() of a float ("1.0", "1e+16", "0.30000000000000004").
std::string float_repr(double f);
// Python str() (what `{{ x }}` prints) and repr() (how items print inside a list).
std::string to_str(const Value& v);
std::string to_repr(const Value& v);
// The Python type name jinja2 uses in messages: "str", "list", "dict"...
std::string type_name(const Value& v);

}  // namespace chorus::chat
