// Expression evaluation.
#include <limits>

#include "engine/chat/interpreter.h"
#include "engine/chat/value_ops.h"

#define EVAL_TRY(var, expr)                                  \
  auto var##_result = (expr);                                \
  if (!var##_result.ok()) return var##_result.error();       \
  auto var = std::move(var##_result).value()

namespace chorus::chat {

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s; s = s->parent_.get())
    for (const auto& [key, value] : s->vars_)
      if (key == name) return &value;
  return nullptr;
}

void Scope::set(std::string_view name, Value value) {
  for (auto& [key, existing] : vars_) {
    if (key == name) { existing = std::move(value); return; }
  }
  vars_.emplace_back(std::string(name), std::move(value));
}

Status Interpreter::step() {
  if (++n_steps_ > options_.max_steps) return make_error("template exceeded its evaluation budget");
  return Ok{};
}

Status Interpreter::check_size(size_t n) const {
  if (n > options_.max_output_bytes) return make_error("template output exceeds the size limit");
  return Ok{};
}

Result<Value> Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard guard(*this);
  if (guard.too_deep()) return make_error("template nesting too deep");
  CHORUS_TRY(step());
  switch (e.kind) {
    case ExprKind::kLiteral: return e.literal;
    case ExprKind::kName: {
      if (const Value* v = scope->lookup(e.name)) return *v;
      return Value::undefined("'" + e.name + "' is undefined");
    }
    case ExprKind::kList: case ExprKind::kTuple: case ExprKind::kDict:
      return eval_collection(e, scope);
    case ExprKind::kGetAttr: {
      EVAL_TRY(obj, eval(*e.operand, scope));
      return get_attribute(obj, e.name);
    }
    case ExprKind::kGetItem: return eval_subscript(e, scope);
    case ExprKind::kSlice: return make_error("slice outside a subscript");
    case ExprKind::kCall: return eval_call(e, scope, nullptr);
    case ExprKind::kFilter: return eval_filter(e, scope, nullptr);
    case ExprKind::kTest: {
      EVAL_TRY(operand, eval(*e.operand, scope));
      EVAL_TRY(args, eval_args(e, scope));
      if (e.unknown) return make_error("no test named '" + e.name + "' found");
      EVAL_TRY(passed, apply_test(e.name, operand, args));
      return Value::boolean(passed);
    }
    case ExprKind::kNot: case ExprKind::kNeg: case ExprKind::kPos: return eval_unary(e, scope);
    case ExprKind::kBinary: {
      EVAL_TRY(a, eval(*e.operand, scope));
      EVAL_TRY(b, eval(*e.args[0], scope));
      return binary_op(e.binary_op, a, b, options_.max_output_bytes);
    }
    case ExprKind::kAnd: case ExprKind::kOr: {
      EVAL_TRY(a, eval(*e.operand, scope));
      // Python returns the deciding operand itself, not a bool.
      if (a.truthy() == (e.kind == ExprKind::kOr)) return a;
      return eval(*e.args[0], scope);
    }
    case ExprKind::kCompare: return eval_compare(e, scope);
    case ExprKind::kCondition: {
      EVAL_TRY(test, eval(*e.args[0], scope));
      if (test.truthy()) return eval(*e.args[1], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return make_error("unknown expression");
}

Result<Value> Interpreter::eval_unary(const Expr& e, const ScopePtr& scope) {
  EVAL_TRY(v, eval(*e.operand, scope));
  if (e.kind == ExprKind::kNot) return Value::boolean(!v.truthy());
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_number()) return make_error("bad operand type for unary " + std::string(e.kind == ExprKind::kNeg ? "-" : "+") + ": '" + type_name(v) + "'");
  if (e.kind == ExprKind::kPos) return v.is_float() ? v : Value::integer(v.as_int());
  if (v.is_float()) return Value::floating(-v.as_double());
  if (v.as_int() == std::numeric_limits<int64_t>::min()) return make_error("integer overflow");
  return Value::integer(-v.as_int());
}

Result<Value> Interpreter::eval_collection(const Expr& e, const ScopePtr& scope) {
  CHORUS_TRY(check_size(e.args.size()));
  if (e.kind == ExprKind::kDict) {
    Value dict = Value::dict();
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      EVAL_TRY(key, eval(*e.args[i], scope));
      EVAL_TRY(value, eval(*e.args[i + 1], scope));
      if (key.is_list() && !key.is_tuple()) return make_error("unhashable type: 'list'");
      if (key.is_dict()) return make_error("unhashable type: 'dict'");
      dict.mutable_dict().set(std::move(key), std::move(value));
    }
    return dict;
  }
  std::vector<Value> items;
  items.reserve(e.args.size());
  for (const auto& item : e.args) {
    EVAL_TRY(v, eval(*item, scope));
    items.push_back(std::move(v));
  }
  return e.kind == ExprKind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Result<Value> Interpreter::eval_subscript(const Expr& e, const ScopePtr& scope) {
  EVAL_TRY(obj, eval(*e.operand, scope));
  const Expr& key_expr = *e.args[0];
  if (key_expr.kind != ExprKind::kSlice) {
    EVAL_TRY(key, eval(key_expr, scope));
    return get_item(obj, key);
  }
  Value bounds[3];
  for (int i = 0; i < 3; ++i) {
    if (!key_expr.args[static_cast<size_t>(i)]) continue;
    EVAL_TRY(b, eval(*key_expr.args[static_cast<size_t>(i)], scope));
    bounds[i] = b.is_undefined() ? Value::undefined("'slice bound' is undefined") : std::move(b);
  }
  return slice_value(obj, bounds[0], bounds[1], bounds[2]);
}

Result<Value> Interpreter::eval_compare(const Expr& e, const ScopePtr& scope) {
  EVAL_TRY(left, eval(*e.operand, scope));
  for (size_t i = 0; i < e.args.size(); ++i) {
    EVAL_TRY(right, eval(*e.args[i], scope));
    bool result = false;
    const CompareOp op = e.compare_ops[i];
    if (op == CompareOp::kEq || op == CompareOp::kNe) {
      result = values_equal(left, right) == (op == CompareOp::kEq);
    } else if (op == CompareOp::kIn || op == CompareOp::kNotIn) {
      EVAL_TRY(found, contains(right, left));
      result = found == (op == CompareOp::kIn);
    } else {
      if (left.is_undefined()) return undefined_error(left);
      if (right.is_undefined()) return undefined_error(right);
      EVAL_TRY(c, compare_values(left, right));
      result = op == CompareOp::kLt ? c < 0 : op == CompareOp::kLe ? c <= 0 : op == CompareOp::kGt ? c > 0 : c >= 0;
    }
    if (!result) return Value::boolean(false);  // chained: a < b < c stops at the first false
    left = std::move(right);
  }
  return Value::boolean(true);
}

Result<CallArgs> Interpreter::eval_args(const Expr& e, const ScopePtr& scope) {
  CallArgs args;
  for (const auto& a : e.args) {
    EVAL_TRY(v, eval(*a, scope));
    args.positional.push_back(std::move(v));
  }
  if (e.star_args) {
    EVAL_TRY(extra, eval(*e.star_args, scope));
    EVAL_TRY(items, iterate(extra));
    for (auto& v : items) args.positional.push_back(std::move(v));
  }
  for (const auto& [key, expr] : e.kwargs) {
    EVAL_TRY(v, eval(*expr, scope));
    args.keyword.emplace_back(key, std::move(v));
  }
  if (e.star_kwargs) {
    EVAL_TRY(extra, eval(*e.star_kwargs, scope));
    if (!extra.is_dict()) return make_error("argument after ** must be a mapping");
    for (const auto& [key, v] : extra.dict_data().entries)
      if (key.is_string()) args.keyword.emplace_back(key.as_string(), v);
  }
  return args;
}

Result<Value> Interpreter::eval_call(const Expr& e, const ScopePtr& scope, const Value* caller) {
  EVAL_TRY(callee, eval(*e.operand, scope));
  EVAL_TRY(args, eval_args(e, scope));
  if (caller) args.keyword.emplace_back("caller", *caller);
  return call(callee, args);
}

Result<Value> Interpreter::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) return undefined_error(callee);
  if (!callee.is_callable()) return make_error("'" + type_name(callee) + "' object is not callable");
  DepthGuard guard(*this);
  if (guard.too_deep()) return make_error("maximum recursion depth exceeded");
  return callee.callable_ref().call(*this, args);
}

// `base` stands in for the innermost operand of a {% filter %} / {% set | f %} chain.
Result<Value> Interpreter::eval_filter(const Expr& e, const ScopePtr& scope, const Value* base) {
  Value operand;
  if (e.operand) {
    auto v = e.operand->kind == ExprKind::kFilter ? eval_filter(*e.operand, scope, base)
                                                  : eval(*e.operand, scope);
    if (!v.ok()) return v;
    operand = std::move(v).value();
  } else if (base) {
    operand = *base;
  }
  EVAL_TRY(args, eval_args(e, scope));
  if (e.unknown) return make_error("no filter named '" + e.name + "' found");
  return apply_filter(e.name, operand, args);
}

}  // namespace chorus::chat
