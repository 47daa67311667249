// Statement grammar: text, {{ output }}, and the {% tags %} Hugging Face templates use.
#include <algorithm>

#include "engine/chat/parser_impl.h"

#define PARSE_TRY(var, expr)                                 \
  auto var##_result = (expr);                                \
  if (!var##_result.ok()) return var##_result.error();       \
  auto var = std::move(var##_result).value()

namespace chorus::chat {
namespace {

NodePtr make_node(NodeKind kind, int line) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->line = line;
  return n;
}

}  // namespace

Error Parser::fail(const std::string& what) const {
  return make_error("template syntax error: " + what + " (line " + std::to_string(current().line) + ")");
}

std::string Parser::describe_current() const {
  const Token& t = current();
  switch (t.type) {
    case TokenType::kEnd: return "end of template";
    case TokenType::kBlockEnd: return "end of statement block";
    case TokenType::kVariableEnd: return "end of print statement";
    case TokenType::kString: return "string";
    case TokenType::kText: return "template data";
    default: return "'" + t.text + "'";
  }
}

Status Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) return fail("expected '" + std::string(op) + "', got " + describe_current());
  return Ok{};
}

Status Parser::expect_block_end() {
  if (current().type != TokenType::kBlockEnd)
    return fail("expected end of statement block, got " + describe_current());
  next();
  return Ok{};
}

Result<std::string> Parser::expect_name() {
  if (current().type != TokenType::kName) return fail("expected name, got " + describe_current());
  std::string name = current().text;
  next();
  return name;
}

Result<std::shared_ptr<const Template>> Parser::parse() {
  auto tmpl = std::make_shared<Template>();
  PARSE_TRY(body, parse_body({}, nullptr));
  if (!unknown_names_.empty()) return make_error("template syntax error: " + unknown_names_.front());
  tmpl->body = std::move(body);
  return std::shared_ptr<const Template>(std::move(tmpl));
}

// Parses nodes until a block tag named in `end_tags`; leaves the position after that name.
Result<Body> Parser::parse_body(std::initializer_list<std::string_view> end_tags, std::string* which_end) {
  DepthGuard guard(*this);
  if (guard.too_deep()) return fail("blocks nested too deeply");
  Body body;
  while (true) {
    const Token& t = current();
    if (t.type == TokenType::kEnd) {
      if (end_tags.size() == 0) return body;
      return fail("unexpected end of template, expected '" + std::string(*end_tags.begin()) + "'");
    }
    if (t.type == TokenType::kText) {
      auto n = make_node(NodeKind::kText, t.line);
      n->text = t.text;
      body.push_back(std::move(n));
      next();
      continue;
    }
    if (t.type == TokenType::kVariableBegin) {
      auto n = make_node(NodeKind::kOutput, t.line);
      next();
      PARSE_TRY(expr, parse_tuple(true, {}, false));
      if (current().type != TokenType::kVariableEnd)
        return fail("expected end of print statement, got " + describe_current());
      next();
      n->expr = std::move(expr);
      body.push_back(std::move(n));
      continue;
    }
    if (t.type != TokenType::kBlockBegin) return fail("unexpected " + describe_current());
    next();
    if (current().type == TokenType::kName &&
        std::find(end_tags.begin(), end_tags.end(), current().text) != end_tags.end()) {
      if (which_end) *which_end = current().text;
      next();
      return body;
    }
    CHORUS_TRY(parse_statement(body));
  }
}

// A body that jinja2 compiles as its own frame: not "soft", so unknown filters are errors.
Result<Body> Parser::parse_inner_body(std::initializer_list<std::string_view> end_tags, std::string* which_end) {
  const bool saved = soft_;
  soft_ = false;
  auto body = parse_body(end_tags, which_end);
  soft_ = saved;
  return body;
}

Status Parser::parse_statement(Body& body) {
  if (current().type != TokenType::kName) return fail("tag name expected");
  const std::string tag = current().text;
  const int line = current().line;
  Result<NodePtr> node = make_error("");
  if (tag == "for") node = parse_for();
  else if (tag == "if") node = parse_if();
  else if (tag == "set") node = parse_set();
  else if (tag == "macro") node = parse_macro();
  else if (tag == "call") node = parse_call_block();
  else if (tag == "filter") node = parse_filter_block();
  else if (tag == "with") node = parse_with();
  else if (tag == "generation") node = parse_scope_block();
  else if (tag == "block") node = parse_scope_block();
  else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return fail("'" + tag + "' outside of a loop");
    next();
    node = make_node(tag == "break" ? NodeKind::kBreak : NodeKind::kContinue, line);
  } else if (tag == "print") {
    next();
    auto n = make_node(NodeKind::kOutput, line);
    PARSE_TRY(expr, parse_tuple(true, {}, false));
    n->expr = std::move(expr);
    node = std::move(n);
  } else {
    return fail("encountered unknown tag '" + tag + "'");
  }
  if (!node.ok()) return node.error();
  CHORUS_TRY(expect_block_end());
  body.push_back(std::move(node).value());
  return Ok{};
}

Result<AssignTarget> Parser::parse_assign_target(bool with_namespace, std::string_view end_name) {
  AssignTarget target;
  if (with_namespace && current().type == TokenType::kName && peek().type == TokenType::kOperator &&
      peek().text == ".") {
    target.names.push_back(current().text);
    next();
    next();
    PARSE_TRY(attr, expect_name());
    target.attribute = std::move(attr);
    return target;
  }
  const bool parens = skip_op("(");
  while (true) {
    PARSE_TRY(name, expect_name());
    if (name == "true" || name == "false" || name == "none" || name == "True" ||
        name == "False" || name == "None" || name == "loop")
      return fail("can't assign to '" + name + "'");
    target.names.push_back(std::move(name));
    if (!skip_op(",")) break;
    target.is_tuple = true;
    if ((parens && is_op(")")) || (!end_name.empty() && is_name(end_name)) || is_op("=")) break;
  }
  if (parens) CHORUS_TRY(expect_op(")"));
  return target;
}

Result<NodePtr> Parser::parse_for() {
  auto n = make_node(NodeKind::kFor, current().line);
  next();
  PARSE_TRY(target, parse_assign_target(false, "in"));
  n->target = std::move(target);
  if (!skip_name("in")) return fail("expected 'in', got " + describe_current());
  PARSE_TRY(iter, parse_tuple(false, "recursive", false));
  n->expr = std::move(iter);
  if (skip_name("if")) {
    const bool saved = soft_;
    soft_ = false;
    auto cond = parse_expression();
    soft_ = saved;
    if (!cond.ok()) return cond.error();
    n->condition = std::move(cond).value();
  }
  if (is_name("recursive")) return fail("recursive loops are not supported");
  CHORUS_TRY(expect_block_end());
  ++loop_depth_;
  std::string end;
  auto body = parse_inner_body({"endfor", "else"}, &end);
  --loop_depth_;
  if (!body.ok()) return body.error();
  n->body = std::move(body).value();
  if (end == "else") {
    CHORUS_TRY(expect_block_end());
    PARSE_TRY(else_body, parse_inner_body({"endfor"}, nullptr));
    n->else_body = std::move(else_body);
  }
  return n;
}

Result<NodePtr> Parser::parse_if() {
  auto n = make_node(NodeKind::kIf, current().line);
  next();
  const bool saved = soft_;
  soft_ = true;
  while (true) {
    PARSE_TRY(cond, parse_tuple(false, {}, false));
    CHORUS_TRY(expect_block_end());
    std::string end;
    PARSE_TRY(body, parse_body({"elif", "else", "endif"}, &end));
    n->conditions.push_back(std::move(cond));
    n->bodies.push_back(std::move(body));
    if (end == "elif") continue;
    if (end == "else") {
      CHORUS_TRY(expect_block_end());
      PARSE_TRY(else_body, parse_body({"endif"}, nullptr));
      n->else_body = std::move(else_body);
    }
    break;
  }
  soft_ = saved;
  return n;
}

Result<NodePtr> Parser::parse_set() {
  const int line = current().line;
  next();
  PARSE_TRY(target, parse_assign_target(true, {}));
  if (skip_op("=")) {
    auto n = make_node(NodeKind::kSet, line);
    n->target = std::move(target);
    PARSE_TRY(value, parse_tuple(true, {}, false));
    n->expr = std::move(value);
    return n;
  }
  auto n = make_node(NodeKind::kSetBlock, line);
  n->target = std::move(target);
  if (is_op("|")) {
    PARSE_TRY(filter, parse_filter(nullptr, false));
    n->filter = std::move(filter);
  }
  CHORUS_TRY(expect_block_end());
  PARSE_TRY(body, parse_inner_body({"endset"}, nullptr));
  n->body = std::move(body);
  return n;
}

Result<std::vector<MacroParam>> Parser::parse_params() {
  std::vector<MacroParam> params;
  CHORUS_TRY(expect_op("("));
  while (!is_op(")")) {
    if (!params.empty()) CHORUS_TRY(expect_op(","));
    if (is_op(")")) break;
    MacroParam p;
    PARSE_TRY(name, expect_name());
    p.name = std::move(name);
    if (skip_op("=")) {
      PARSE_TRY(def, parse_expression());
      p.default_value = std::move(def);
    } else if (!params.empty() && params.back().default_value) {
      return fail("non-default argument follows default argument");
    }
    params.push_back(std::move(p));
  }
  next();
  return params;
}

Result<NodePtr> Parser::parse_macro() {
  auto n = make_node(NodeKind::kMacro, current().line);
  next();
  PARSE_TRY(name, expect_name());
  n->name = std::move(name);
  PARSE_TRY(params, parse_params());
  n->params = std::move(params);
  CHORUS_TRY(expect_block_end());
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;  // a macro body is a function: break cannot leave it
  auto body = parse_inner_body({"endmacro"}, nullptr);
  loop_depth_ = saved_loops;
  if (!body.ok()) return body.error();
  n->body = std::move(body).value();
  return n;
}

Result<NodePtr> Parser::parse_call_block() {
  auto n = make_node(NodeKind::kCallBlock, current().line);
  next();
  if (is_op("(")) {
    PARSE_TRY(params, parse_params());
    n->params = std::move(params);
  }
  PARSE_TRY(call, parse_expression());
  if (call->kind != ExprKind::kCall) return fail("expected call");
  n->expr = std::move(call);
  CHORUS_TRY(expect_block_end());
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  auto body = parse_inner_body({"endcall"}, nullptr);
  loop_depth_ = saved_loops;
  if (!body.ok()) return body.error();
  n->body = std::move(body).value();
  return n;
}

Result<NodePtr> Parser::parse_filter_block() {
  auto n = make_node(NodeKind::kFilterBlock, current().line);
  next();
  PARSE_TRY(filter, parse_filter(nullptr, true));
  n->filter = std::move(filter);
  CHORUS_TRY(expect_block_end());
  PARSE_TRY(body, parse_inner_body({"endfilter"}, nullptr));
  n->body = std::move(body);
  return n;
}

Result<NodePtr> Parser::parse_with() {
  auto n = make_node(NodeKind::kWith, current().line);
  next();
  while (current().type != TokenType::kBlockEnd) {
    if (!n->targets.empty()) CHORUS_TRY(expect_op(","));
    PARSE_TRY(target, parse_assign_target(false, {}));
    CHORUS_TRY(expect_op("="));
    PARSE_TRY(value, parse_expression());
    n->targets.push_back(std::move(target));
    n->values.push_back(std::move(value));
  }
  CHORUS_TRY(expect_block_end());
  PARSE_TRY(body, parse_inner_body({"endwith"}, nullptr));
  n->body = std::move(body);
  return n;
}

// {% generation %} (Hugging Face's assistant-mask marker) and {% block %}: the body renders
// in place, in its own scope.
Result<NodePtr> Parser::parse_scope_block() {
  auto n = make_node(NodeKind::kScope, current().line);
  const bool is_block = current().text == "block";
  next();
  if (is_block) {
    PARSE_TRY(name, expect_name());
    n->name = std::move(name);
    while (skip_name("scoped") || skip_name("required")) {}
  }
  CHORUS_TRY(expect_block_end());
  auto body = is_block ? parse_inner_body({"endblock"}, nullptr) : parse_inner_body({"endgeneration"}, nullptr);
  if (!body.ok()) return body.error();
  n->body = std::move(body).value();
  if (is_block && current().type == TokenType::kName) next();  // {% endblock name %}
  return n;
}

Result<std::shared_ptr<const Template>> parse_template(std::string_view source, const ParseLimits& limits) {
  auto tokens = tokenize(source);
  if (!tokens.ok()) return tokens.error();
  Parser parser(std::move(tokens).value(), limits);
  return parser.parse();
}

}  // namespace chorus::chat
