// jinja2's built-in tests: `x is defined`, `x is string`, `n is divisibleby 3`...
#include <cmath>

#include "engine/chat/filters.h"
#include "engine/chat/interpreter.h"
#include "engine/chat/parser.h"
#include "engine/chat/utf8.h"
#include "engine/chat/value_ops.h"

namespace chorus::chat {
namespace {

const Value* first_arg(const CallArgs& args) {
  if (!args.positional.empty()) return &args.positional[0];
  if (!args.keyword.empty()) return &args.keyword[0].second;
  return nullptr;
}

Result<bool> t_defined(Interpreter&, const Value& v, const CallArgs&) { return !v.is_undefined(); }
Result<bool> t_undefined(Interpreter&, const Value& v, const CallArgs&) { return v.is_undefined(); }
Result<bool> t_none(Interpreter&, const Value& v, const CallArgs&) { return v.is_none(); }
Result<bool> t_boolean(Interpreter&, const Value& v, const CallArgs&) { return v.is_bool(); }
Result<bool> t_true(Interpreter&, const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }
Result<bool> t_false(Interpreter&, const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }
Result<bool> t_string(Interpreter&, const Value& v, const CallArgs&) { return v.is_string(); }
Result<bool> t_number(Interpreter&, const Value& v, const CallArgs&) { return v.is_number(); }
Result<bool> t_integer(Interpreter&, const Value& v, const CallArgs&) { return v.kind() == Kind::kInt; }
Result<bool> t_float(Interpreter&, const Value& v, const CallArgs&) { return v.is_float(); }
Result<bool> t_mapping(Interpreter&, const Value& v, const CallArgs&) { return v.is_dict() && !v.is_namespace(); }
Result<bool> t_iterable(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || v.is_iterator() || (v.is_dict() && !v.is_namespace()) || v.is_undefined();
}
Result<bool> t_sequence(Interpreter&, const Value& v, const CallArgs&) {
  return v.is_string() || v.is_list() || (v.is_dict() && !v.is_namespace());
}
Result<bool> t_callable(Interpreter&, const Value& v, const CallArgs&) { return v.is_callable(); }
Result<bool> t_escaped(Interpreter&, const Value&, const CallArgs&) { return false; }

Result<bool> t_lower(Interpreter&, const Value& v, const CallArgs&) {
  if (!v.is_string()) return false;
  bool cased = false;
  for (uint32_t cp : utf8::decode(v.as_string())) {
    if (utf8::is_upper(cp)) return false;
    cased |= utf8::is_lower(cp);
  }
  return cased;
}
Result<bool> t_upper(Interpreter&, const Value& v, const CallArgs&) {
  if (!v.is_string()) return false;
  bool cased = false;
  for (uint32_t cp : utf8::decode(v.as_string())) {
    if (utf8::is_lower(cp) && !utf8::is_upper(cp)) return false;
    cased |= utf8::is_upper(cp);
  }
  return cased;
}

Result<bool> parity(const Value& v, int64_t remainder) {
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_number()) return make_error("unsupported operand type(s) for %: '" + type_name(v) + "' and 'int'");
  if (v.is_float()) return std::fmod(std::fabs(v.as_double()), 2.0) == static_cast<double>(remainder);
  const int64_t m = v.as_int() % 2;
  return (m < 0 ? -m : m) == remainder;
}
Result<bool> t_even(Interpreter&, const Value& v, const CallArgs&) { return parity(v, 0); }
Result<bool> t_odd(Interpreter&, const Value& v, const CallArgs&) { return parity(v, 1); }

Result<bool> t_divisibleby(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* n = first_arg(args);
  if (!n) return make_error("divisibleby needs a number");
  auto rem = binary_op(BinaryOp::kMod, v, *n, 1 << 20);
  if (!rem.ok()) return rem.error();
  return rem->is_number() && rem->as_double() == 0.0;
}

template <CompareOp Op>
Result<bool> t_compare(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* other = first_arg(args);
  if (!other) return make_error("comparison test needs an argument");
  if (Op == CompareOp::kEq) return values_equal(v, *other);
  if (Op == CompareOp::kNe) return !values_equal(v, *other);
  if (v.is_undefined()) return undefined_error(v);
  auto c = compare_values(v, *other);
  if (!c.ok()) return c.error();
  switch (Op) {
    case CompareOp::kLt: return *c < 0;
    case CompareOp::kLe: return *c <= 0;
    case CompareOp::kGt: return *c > 0;
    default: return *c >= 0;
  }
}

Result<bool> t_in(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* seq = first_arg(args);
  if (!seq) return make_error("in test needs a container");
  return contains(*seq, v);
}

Result<bool> t_sameas(Interpreter&, const Value& v, const CallArgs& args) {
  const Value* other = first_arg(args);
  if (!other) return make_error("sameas needs an argument");
  if (v.identity() || other->identity()) return v.identity() == other->identity();
  return v.kind() == other->kind() && values_equal(v, *other);
}

Result<bool> t_filter(Interpreter&, const Value& v, const CallArgs&) { return v.is_string() && is_known_filter(v.as_string()); }
Result<bool> t_test(Interpreter&, const Value& v, const CallArgs&) { return v.is_string() && is_known_test(v.as_string()); }

}  // namespace

void add_tests(TestTable& t) {
  t["defined"] = t_defined;
  t["undefined"] = t_undefined;
  t["none"] = t_none;
  t["boolean"] = t_boolean;
  t["true"] = t_true;
  t["false"] = t_false;
  t["string"] = t_string;
  t["number"] = t_number;
  t["integer"] = t_integer;
  t["float"] = t_float;
  t["mapping"] = t_mapping;
  t["iterable"] = t_iterable;
  t["sequence"] = t_sequence;
  t["callable"] = t_callable;
  t["escaped"] = t_escaped;
  t["lower"] = t_lower;
  t["upper"] = t_upper;
  t["even"] = t_even;
  t["odd"] = t_odd;
  t["divisibleby"] = t_divisibleby;
  t["eq"] = t["equalto"] = t["=="] = t_compare<CompareOp::kEq>;
  t["ne"] = t["!="] = t_compare<CompareOp::kNe>;
  t["lt"] = t["lessthan"] = t["<"] = t_compare<CompareOp::kLt>;
  t["le"] = t["<="] = t_compare<CompareOp::kLe>;
  t["gt"] = t["greaterthan"] = t[">"] = t_compare<CompareOp::kGt>;
  t["ge"] = t[">="] = t_compare<CompareOp::kGe>;
  t["in"] = t_in;
  t["sameas"] = t_sameas;
  t["filter"] = t_filter;
  t["test"] = t_test;
}

}  // namespace chorus::chat
