// Expression grammar, lowest precedence first, exactly as jinja2 nests it:
// condition (a if b else c) < or < and < not < comparisons/in < + - < ~ < * / // % < ** <
// unary - + < primary with postfix (. [] ()) and filters/tests (| is).
#include "engine/chat/parser_impl.h"

#define PARSE_TRY(var, expr)                                 \
  auto var##_result = (expr);                                \
  if (!var##_result.ok()) return var##_result.error();       \
  auto var = std::move(var##_result).value()

namespace chorus::chat {
namespace {

ExprPtr make_binary(ExprKind kind, ExprPtr left, ExprPtr right, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  e->operand = std::move(left);
  e->args.push_back(std::move(right));
  return e;
}

}  // namespace

Result<ExprPtr> Parser::parse_tuple(bool with_condition, std::string_view extra_end_name,
                                    bool explicit_parens) {
  const int line = current().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  auto at_end = [&] {
    const Token& t = current();
    return t.type == TokenType::kBlockEnd || t.type == TokenType::kVariableEnd ||
           t.type == TokenType::kEnd || is_op(")") ||
           (!extra_end_name.empty() && is_name(extra_end_name));
  };
  while (true) {
    if (!items.empty()) CHORUS_TRY(expect_op(","));
    if (at_end()) break;
    PARSE_TRY(item, parse_expression(with_condition));
    items.push_back(std::move(item));
    if (is_op(",")) is_tuple = true;
    else break;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) return fail("expected an expression, got " + describe_current());
  }
  auto e = make_expr(ExprKind::kTuple);
  e->line = line;
  e->args = std::move(items);
  return e;
}

Result<ExprPtr> Parser::parse_expression(bool with_condition) {
  DepthGuard guard(*this);
  if (guard.too_deep()) return fail("expression nested too deeply");
  return with_condition ? parse_condition() : parse_or();
}

Result<ExprPtr> Parser::parse_condition() {
  const size_t unknown_mark = unknown_names_.size();
  const bool saved_soft = soft_;
  PARSE_TRY(expr, parse_or());
  while (is_name("if")) {
    // jinja2 compiles a whole conditional expression as a "soft" frame.
    unknown_names_.resize(unknown_mark);
    soft_ = true;
    next();
    auto cond = make_expr(ExprKind::kCondition);
    PARSE_TRY(test, parse_or());
    ExprPtr otherwise;
    if (skip_name("else")) {
      PARSE_TRY(alt, parse_condition());
      otherwise = std::move(alt);
    }
    cond->args.push_back(std::move(test));
    cond->args.push_back(std::move(expr));
    cond->args.push_back(std::move(otherwise));
    expr = std::move(cond);
  }
  soft_ = saved_soft;
  return expr;
}

Result<ExprPtr> Parser::parse_or() {
  PARSE_TRY(left, parse_and());
  while (is_name("or")) {
    const int line = current().line;
    next();
    PARSE_TRY(right, parse_and());
    left = make_binary(ExprKind::kOr, std::move(left), std::move(right), line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_and() {
  PARSE_TRY(left, parse_not());
  while (is_name("and")) {
    const int line = current().line;
    next();
    PARSE_TRY(right, parse_not());
    left = make_binary(ExprKind::kAnd, std::move(left), std::move(right), line);
  }
  return left;
}

Result<ExprPtr> Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(*this);
    if (guard.too_deep()) return fail("expression nested too deeply");
    auto e = make_expr(ExprKind::kNot);
    next();
    PARSE_TRY(operand, parse_not());
    e->operand = std::move(operand);
    return e;
  }
  return parse_compare();
}

Result<ExprPtr> Parser::parse_compare() {
  PARSE_TRY(first, parse_math1());
  ExprPtr cmp;
  while (true) {
    CompareOp op;
    const Token& t = current();
    if (t.type == TokenType::kOperator && t.text == "==") op = CompareOp::kEq;
    else if (t.type == TokenType::kOperator && t.text == "!=") op = CompareOp::kNe;
    else if (t.type == TokenType::kOperator && t.text == "<") op = CompareOp::kLt;
    else if (t.type == TokenType::kOperator && t.text == "<=") op = CompareOp::kLe;
    else if (t.type == TokenType::kOperator && t.text == ">") op = CompareOp::kGt;
    else if (t.type == TokenType::kOperator && t.text == ">=") op = CompareOp::kGe;
    else if (is_name("in")) op = CompareOp::kIn;
    else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") { op = CompareOp::kNotIn; next(); }
    else break;
    next();
    if (!cmp) {
      cmp = make_expr(ExprKind::kCompare);
      cmp->operand = std::move(first);
    }
    PARSE_TRY(right, parse_math1());
    cmp->compare_ops.push_back(op);
    cmp->args.push_back(std::move(right));
  }
  return cmp ? std::move(cmp) : std::move(first);
}

Result<ExprPtr> Parser::parse_math1() {
  PARSE_TRY(left, parse_concat());
  while (is_op("+") || is_op("-")) {
    const BinaryOp op = is_op("+") ? BinaryOp::kAdd : BinaryOp::kSub;
    const int line = current().line;
    next();
    PARSE_TRY(right, parse_concat());
    left = make_binary(ExprKind::kBinary, std::move(left), std::move(right), line);
    left->binary_op = op;
  }
  return left;
}

Result<ExprPtr> Parser::parse_concat() {
  PARSE_TRY(left, parse_math2());
  while (is_op("~")) {
    const int line = current().line;
    next();
    PARSE_TRY(right, parse_math2());
    left = make_binary(ExprKind::kBinary, std::move(left), std::move(right), line);
    left->binary_op = BinaryOp::kConcat;
  }
  return left;
}

Result<ExprPtr> Parser::parse_math2() {
  PARSE_TRY(left, parse_pow());
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const BinaryOp op = is_op("*") ? BinaryOp::kMul : is_op("/") ? BinaryOp::kDiv
                        : is_op("//") ? BinaryOp::kFloorDiv : BinaryOp::kMod;
    const int line = current().line;
    next();
    PARSE_TRY(right, parse_pow());
    left = make_binary(ExprKind::kBinary, std::move(left), std::move(right), line);
    left->binary_op = op;
  }
  return left;
}

Result<ExprPtr> Parser::parse_pow() {
  PARSE_TRY(left, parse_unary(true));
  while (is_op("**")) {
    const int line = current().line;
    next();
    PARSE_TRY(right, parse_unary(true));
    left = make_binary(ExprKind::kBinary, std::move(left), std::move(right), line);
    left->binary_op = BinaryOp::kPow;
  }
  return left;
}

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
  DepthGuard guard(*this);
  if (guard.too_deep()) return fail("expression nested too deeply");
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    auto e = make_expr(is_op("-") ? ExprKind::kNeg : ExprKind::kPos);
    next();
    PARSE_TRY(operand, parse_unary(false));
    e->operand = std::move(operand);
    node = std::move(e);
  } else {
    PARSE_TRY(primary, parse_primary());
    node = std::move(primary);
  }
  PARSE_TRY(post, parse_postfix(std::move(node)));
  if (!with_filter) return post;
  return parse_filter_expr(std::move(post));
}

Result<ExprPtr> Parser::parse_primary() {
  const Token& t = current();
  auto e = make_expr(ExprKind::kLiteral);
  switch (t.type) {
    case TokenType::kName:
      if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
      else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
      else if (t.text == "none" || t.text == "None") e->literal = Value::none();
      else { e->kind = ExprKind::kName; e->name = t.text; }
      next();
      return e;
    case TokenType::kString: {
      std::string text;
      while (current().type == TokenType::kString) { text += current().text; next(); }
      e->literal = Value::string(std::move(text));
      return e;
    }
    case TokenType::kInteger: e->literal = Value::integer(t.int_value); next(); return e;
    case TokenType::kFloat: e->literal = Value::floating(t.float_value); next(); return e;
    default: break;
  }
  if (skip_op("(")) {
    PARSE_TRY(inner, parse_tuple(true, {}, true));
    CHORUS_TRY(expect_op(")"));
    return inner;
  }
  if (is_op("[")) return parse_list_literal();
  if (is_op("{")) return parse_dict_literal();
  return fail("unexpected " + describe_current());
}

Result<ExprPtr> Parser::parse_list_literal() {
  auto e = make_expr(ExprKind::kList);
  next();
  while (!is_op("]")) {
    if (!e->args.empty()) CHORUS_TRY(expect_op(","));
    if (is_op("]")) break;
    PARSE_TRY(item, parse_expression());
    e->args.push_back(std::move(item));
  }
  next();
  return e;
}

Result<ExprPtr> Parser::parse_dict_literal() {
  auto e = make_expr(ExprKind::kDict);
  next();
  while (!is_op("}")) {
    if (!e->args.empty()) CHORUS_TRY(expect_op(","));
    if (is_op("}")) break;
    PARSE_TRY(key, parse_expression());
    CHORUS_TRY(expect_op(":"));
    PARSE_TRY(value, parse_expression());
    e->args.push_back(std::move(key));
    e->args.push_back(std::move(value));
  }
  next();
  return e;
}

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      PARSE_TRY(sub, parse_subscript(std::move(node)));
      node = std::move(sub);
    } else if (is_op("(")) {
      auto call = make_expr(ExprKind::kCall);
      call->operand = std::move(node);
      CHORUS_TRY(parse_call_args(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_subscript(ExprPtr node) {
  if (skip_op(".")) {
    if (current().type == TokenType::kName) {
      auto e = make_expr(ExprKind::kGetAttr);
      e->operand = std::move(node);
      e->name = current().text;
      next();
      return e;
    }
    if (current().type != TokenType::kInteger) return fail("expected name or number after '.'");
    auto e = make_expr(ExprKind::kGetItem);
    auto index = make_expr(ExprKind::kLiteral);
    index->literal = Value::integer(current().int_value);
    next();
    e->operand = std::move(node);
    e->args.push_back(std::move(index));
    return e;
  }
  auto e = make_expr(ExprKind::kGetItem);
  e->operand = std::move(node);
  next();  // '['
  std::vector<ExprPtr> keys;
  while (!is_op("]")) {
    if (!keys.empty()) {
      CHORUS_TRY(expect_op(","));
      if (is_op("]")) break;
    }
    PARSE_TRY(key, parse_slice_or_expr());
    keys.push_back(std::move(key));
  }
  if (keys.empty()) return fail("expected subscript expression");
  next();  // ']'
  if (keys.size() == 1) {
    e->args.push_back(std::move(keys[0]));
  } else {
    auto tuple = make_expr(ExprKind::kTuple);
    tuple->args = std::move(keys);
    e->args.push_back(std::move(tuple));
  }
  return e;
}

// `a`, or a slice `a:b:c` with any part omitted.
Result<ExprPtr> Parser::parse_slice_or_expr() {
  auto slice = make_expr(ExprKind::kSlice);
  auto part_ends = [&] { return is_op("]") || is_op(",") || is_op(":"); };
  if (!is_op(":")) {
    PARSE_TRY(start, parse_expression());
    if (!is_op(":")) return start;
    slice->args.push_back(std::move(start));
  } else {
    slice->args.push_back(nullptr);
  }
  next();  // ':'
  if (part_ends()) {
    slice->args.push_back(nullptr);
  } else {
    PARSE_TRY(stop, parse_expression());
    slice->args.push_back(std::move(stop));
  }
  if (skip_op(":") && !part_ends()) {
    PARSE_TRY(step, parse_expression());
    slice->args.push_back(std::move(step));
  } else {
    slice->args.push_back(nullptr);
  }
  return slice;
}

Status Parser::parse_call_args(Expr& call) {
  CHORUS_TRY(expect_op("("));
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      CHORUS_TRY(expect_op(","));
      if (is_op(")")) break;
    }
    first = false;
    if (skip_op("*")) {
      PARSE_TRY(star, parse_expression());
      call.star_args = std::move(star);
    } else if (skip_op("**")) {
      PARSE_TRY(star, parse_expression());
      call.star_kwargs = std::move(star);
    } else if (current().type == TokenType::kName && peek().type == TokenType::kOperator &&
               peek().text == "=") {
      std::string key = current().text;
      next();
      next();
      PARSE_TRY(value, parse_expression());
      call.kwargs.emplace_back(std::move(key), std::move(value));
    } else {
      if (!call.kwargs.empty() || call.star_args || call.star_kwargs)
        return fail("invalid syntax for function call expression");
      PARSE_TRY(value, parse_expression());
      call.args.push_back(std::move(value));
    }
  }
  next();  // ')'
  return Ok{};
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      PARSE_TRY(f, parse_filter(std::move(node), false));
      node = std::move(f);
    } else if (is_name("is")) {
      PARSE_TRY(t, parse_test(std::move(node)));
      node = std::move(t);
    } else if (is_op("(")) {
      auto call = make_expr(ExprKind::kCall);
      call->operand = std::move(node);
      CHORUS_TRY(parse_call_args(*call));
      node = std::move(call);
    } else {
      return node;
    }
  }
}

Result<ExprPtr> Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    auto f = make_expr(ExprKind::kFilter);
    PARSE_TRY(name, expect_name());
    while (skip_op(".")) {
      PARSE_TRY(part, expect_name());
      name += "." + part;
    }
    f->name = std::move(name);
    if (!is_known_filter(f->name)) {
      f->unknown = true;
      if (!soft_) unknown_names_.push_back("no filter named '" + f->name + "'");
    }
    f->operand = std::move(node);
    if (is_op("(")) CHORUS_TRY(parse_call_args(*f));
    node = std::move(f);
  }
  return node;
}

Result<ExprPtr> Parser::parse_test(ExprPtr node) {
  next();  // 'is'
  const bool negated = skip_name("not");
  auto t = make_expr(ExprKind::kTest);
  PARSE_TRY(name, expect_name());
  while (skip_op(".")) {
    PARSE_TRY(part, expect_name());
    name += "." + part;
  }
  t->name = std::move(name);
  if (!is_known_test(t->name)) {
    t->unknown = true;
    if (!soft_) unknown_names_.push_back("no test named '" + t->name + "'");
  }
  t->operand = std::move(node);
  const Token& c = current();
  const bool starts_primary =
      c.type == TokenType::kName || c.type == TokenType::kString || c.type == TokenType::kInteger ||
      c.type == TokenType::kFloat || is_op("[") || is_op("{");
  if (is_op("(")) {
    CHORUS_TRY(parse_call_args(*t));
  } else if (starts_primary && !is_name("else") && !is_name("or") && !is_name("and")) {
    // `x is divisibleby 3`: one bare argument.
    if (is_name("is")) return fail("you cannot chain multiple tests with is");
    PARSE_TRY(arg, parse_primary());
    PARSE_TRY(post, parse_postfix(std::move(arg)));
    t->args.push_back(std::move(post));
  }
  if (!negated) return t;
  auto n = make_expr(ExprKind::kNot);
  n->operand = std::move(t);
  return n;
}

}  // namespace chorus::chat
