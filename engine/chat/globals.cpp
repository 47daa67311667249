// Global functions every Hugging Face chat template can call.
#include <ctime>

#include "engine/chat/interpreter.h"

namespace chorus::chat {
namespace {

using NativeFn = Result<Value> (*)(Interpreter&, const CallArgs&);

class NativeFunction : public Callable {
 public:
  NativeFunction(std::string name, NativeFn fn) : name_(std::move(name)), fn_(fn) {}
  Result<Value> call(Interpreter& interp, const CallArgs& args) const override { return fn_(interp, args); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  NativeFn fn_;
};

// jinja2's sandbox caps range() at 100000 items; so do we.
constexpr int64_t kMaxRange = 100000;

Result<Value> fn_range(Interpreter&, const CallArgs& args) {
  for (const Value& v : args.positional)
    if (!v.is_int()) return make_error("range() integer argument expected, got " + type_name(v));
  int64_t start = 0, stop = 0, step = 1;
  const auto& p = args.positional;
  if (p.size() == 1) stop = p[0].as_int();
  else if (p.size() == 2 || p.size() == 3) { start = p[0].as_int(); stop = p[1].as_int(); }
  else return make_error("range expected 1 to 3 arguments");
  if (p.size() == 3) step = p[2].as_int();
  if (step == 0) return make_error("range() arg 3 must not be zero");
  const long double count_ld = step > 0 ? (static_cast<long double>(stop) - start) / step
                                        : (static_cast<long double>(start) - stop) / -step;
  if (count_ld > kMaxRange) return make_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) items.push_back(Value::integer(i));
  return Value::list(std::move(items));
}

Result<Value> fn_namespace(Interpreter& interp, const CallArgs& args) {
  Value ns = Value::namespace_object();
  interp.track_namespace(ns);
  for (const Value& init : args.positional) {
    if (!init.is_dict()) return make_error("namespace() positional argument must be a mapping");
    for (const auto& [k, v] : init.dict_data().entries) ns.mutable_dict().set(k, v);
  }
  for (const auto& [k, v] : args.keyword) ns.dict_set(k, v);
  return ns;
}

Result<Value> fn_dict(Interpreter&, const CallArgs& args) {
  Value d = Value::dict();
  for (const Value& init : args.positional) {
    if (!init.is_dict()) return make_error("dict() positional argument must be a mapping");
    for (const auto& [k, v] : init.dict_data().entries) d.mutable_dict().set(k, v);
  }
  for (const auto& [k, v] : args.keyword) d.dict_set(k, v);
  return d;
}

Result<Value> fn_raise_exception(Interpreter&, const CallArgs& args) {
  const Value* msg = args.find("message", 0);
  return make_error(msg ? to_str(*msg) : std::string("template raised an exception"));
}

Result<Value> fn_strftime_now(Interpreter& interp, const CallArgs& args) {
  const Value* fmt = args.find("format", 0);
  if (!fmt || !fmt->is_string()) return make_error("strftime_now() expects a format string");
  std::tm now{};
  if (interp.options().clock) {
    now = interp.options().clock();
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &now);
  }
  if (fmt->as_string().empty()) return Value::string("");
  // strftime returns 0 both for "too small" and for an empty result; grow a few times.
  for (size_t cap = 256; cap <= (size_t{1} << 20); cap *= 8) {
    std::string buf(cap, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), fmt->as_string().c_str(), &now);
    if (n > 0) { buf.resize(n); return Value::string(std::move(buf)); }
  }
  return Value::string("");
}

// joiner(sep): returns "" on its first call and `sep` on every later one.
class Joiner : public Callable {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  Result<Value> call(Interpreter&, const CallArgs&) const override {
    if (!used_) { used_ = true; return Value::string(""); }
    return Value::string(sep_);
  }
  std::string name() const override { return "joiner"; }

 private:
  std::string sep_;
  mutable bool used_ = false;  // the one stateful global, as in jinja2
};

Result<Value> fn_joiner(Interpreter&, const CallArgs& args) {
  const Value* sep = args.find("sep", 0);
  return Value::callable(std::make_shared<Joiner>(sep ? to_str(*sep) : std::string(", ")));
}

}  // namespace

void install_globals(Scope& scope, const RenderOptions&) {
  const std::pair<const char*, NativeFn> functions[] = {
      {"range", fn_range},
      {"namespace", fn_namespace},
      {"dict", fn_dict},
      {"raise_exception", fn_raise_exception},
      {"strftime_now", fn_strftime_now},
      {"joiner", fn_joiner},
  };
  for (const auto& [name, fn] : functions)
    scope.set(name, Value::callable(std::make_shared<NativeFunction>(name, fn)));
}

}  // namespace chorus::chat
