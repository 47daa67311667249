#pragma once
// The parser's state, shared by its two halves: parser_stmt.cpp (tags and blocks) and
// parser_expr.cpp (expressions).
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/chat/ast.h"
#include "engine/chat/lexer.h"
#include "engine/chat/parser.h"

namespace chorus::chat {

class Parser {
 public:
  Parser(std::vector<Token> tokens, const ParseLimits& limits)
      : tokens_(std::move(tokens)), limits_(limits) {}

  Result<std::shared_ptr<const Template>> parse();

  // Statements (parser_stmt.cpp).
  Result<Body> parse_body(std::initializer_list<std::string_view> end_tags, std::string* which_end);
  Status parse_statement(Body& body);
  Result<NodePtr> parse_for();
  Result<NodePtr> parse_if();
  Result<NodePtr> parse_set();
  Result<NodePtr> parse_macro();
  Result<NodePtr> parse_call_block();
  Result<NodePtr> parse_filter_block();
  Result<NodePtr> parse_with();
  Result<NodePtr> parse_scope_block();
  Result<AssignTarget> parse_assign_target(bool with_namespace, std::string_view end_name);
  Result<std::vector<MacroParam>> parse_params();
  Result<Body> parse_inner_body(std::initializer_list<std::string_view> end_tags, std::string* which_end);

  // Expressions (parser_expr.cpp).
  Result<ExprPtr> parse_tuple(bool with_condition, std::string_view extra_end_name, bool explicit_parens);
  Result<ExprPtr> parse_expression(bool with_condition = true);
  Result<ExprPtr> parse_condition();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_list_literal();
  Result<ExprPtr> parse_dict_literal();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);
  Result<ExprPtr> parse_slice_or_expr();
  Result<ExprPtr> parse_filter_expr(ExprPtr node);
  Result<ExprPtr> parse_filter(ExprPtr node, bool start_inline);
  Result<ExprPtr> parse_test(ExprPtr node);
  Status parse_call_args(Expr& call);

  // Token helpers.
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  void next() { if (pos_ + 1 < tokens_.size()) ++pos_; }
  bool is_op(std::string_view op) const { return current().type == TokenType::kOperator && current().text == op; }
  bool is_name(std::string_view name) const { return current().type == TokenType::kName && current().text == name; }
  bool skip_op(std::string_view op) { if (!is_op(op)) return false; next(); return true; }
  bool skip_name(std::string_view name) { if (!is_name(name)) return false; next(); return true; }
  Status expect_op(std::string_view op);
  Status expect_block_end();
  Result<std::string> expect_name();
  Error fail(const std::string& what) const;
  std::string describe_current() const;

  ExprPtr make_expr(ExprKind kind) const {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = current().line;
    return e;
  }

  // Depth guard: every recursive descent step goes through one.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) { ++p.depth_; }
    ~DepthGuard() { --p.depth_; }
    bool too_deep() const { return p.depth_ > p.limits_.max_depth; }
  };

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  ParseLimits limits_;
  int depth_ = 0;
  int loop_depth_ = 0;   // break/continue are valid only inside a for body
  bool soft_ = false;    // inside an if test/body or a conditional expression
  std::vector<std::string> unknown_names_;  // unknown filters/tests outside soft scope
};

}  // namespace chorus::chat
