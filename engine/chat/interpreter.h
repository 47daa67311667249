#pragma once
// Tree-walking evaluator. Statements run in interp_stmt.cpp, expressions in
// interp_expr.cpp; filters, tests and methods call back in through the public members.
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/ast.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/value.h"

namespace chorus::chat {

// Variables of one frame. A for-iteration, macro call, with-block and block-set each get
// their own; `if` does not (as in jinja2, where `set` inside `if` is visible after it).
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* lookup(std::string_view name) const;
  void set(std::string_view name, Value value);

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  explicit Interpreter(const RenderOptions& options) : options_(options) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  Result<std::string> render(const Template& tmpl, const Value& context);

  // Statements.
  Result<Flow> exec_body(const Body& body, const ScopePtr& scope);
  Result<std::string> capture(const Body& body, const ScopePtr& scope);

  // Expressions.
  Result<Value> eval(const Expr& expr, const ScopePtr& scope);
  Result<Value> call(const Value& callee, const CallArgs& args);
  Result<Value> apply_filter(const std::string& name, const Value& operand, const CallArgs& args);
  Result<bool> apply_test(const std::string& name, const Value& operand, const CallArgs& args);

  // Budgets shared by everything that does work or allocates.
  Status step();
  Status check_size(size_t n_bytes_or_items) const;
  const RenderOptions& options() const { return options_; }
  // Namespaces are the only mutable objects, so the only way to build a reference cycle
  // (`ns.self = ns`); the interpreter empties them all when the render ends.
  void track_namespace(const Value& ns) { namespaces_.push_back(ns); }

  // Nesting guard for eval/exec/macro calls.
  struct DepthGuard {
    Interpreter& in;
    explicit DepthGuard(Interpreter& i) : in(i) { ++in.depth_; }
    ~DepthGuard() { --in.depth_; }
    bool too_deep() const { return in.depth_ > in.options_.max_depth; }
  };

 private:
  const RenderOptions& options_;
  std::string* out_ = nullptr;  // where output goes now (macro calls capture into their own)
  int64_t n_steps_ = 0;
  int depth_ = 0;
  std::vector<Value> namespaces_;

  Status write(std::string_view text);
  Result<Flow> exec(const Node& node, const ScopePtr& scope);
  Result<Flow> exec_if(const Node& node, const ScopePtr& scope);
  Result<Flow> exec_for(const Node& node, const ScopePtr& scope);
  Status exec_set(const Node& node, const ScopePtr& scope);
  Status exec_set_block(const Node& node, const ScopePtr& scope);
  Status exec_call_block(const Node& node, const ScopePtr& scope);
  Status exec_filter_block(const Node& node, const ScopePtr& scope);
  Result<Flow> exec_with(const Node& node, const ScopePtr& scope);
  Status assign(const AssignTarget& target, const Value& value, const ScopePtr& scope);

  Result<Value> eval_call(const Expr& expr, const ScopePtr& scope, const Value* caller);
  Result<CallArgs> eval_args(const Expr& expr, const ScopePtr& scope);
  Result<Value> eval_filter(const Expr& expr, const ScopePtr& scope, const Value* base);
  Result<Value> eval_compare(const Expr& expr, const ScopePtr& scope);
  Result<Value> eval_collection(const Expr& expr, const ScopePtr& scope);
  Result<Value> eval_subscript(const Expr& expr, const ScopePtr& scope);
  Result<Value> eval_unary(const Expr& expr, const ScopePtr& scope);

  friend class MacroCallable;
};

// A macro (or a {% call %} block's caller): parameters, body, and the scope it closes over.
class MacroCallable : public Callable {
 public:
  MacroCallable(const Node& node, const ScopePtr& closure, std::string name)
      : node_(node), closure_(closure), name_(std::move(name)) {}
  Result<Value> call(Interpreter& interp, const CallArgs& args) const override;
  std::string name() const override { return name_; }

 private:
  const Node& node_;  // kMacro or kCallBlock; the Template outlives every render
  // Weak: the defining scope usually holds this macro, and a strong pointer would make a
  // cycle that is never freed. A macro outliving its scope cannot be called.
  std::weak_ptr<Scope> closure_;
  std::string name_;
};

// Globals (globals.cpp): range, namespace, dict, raise_exception, strftime_now, ...
void install_globals(Scope& scope, const RenderOptions& options);

}  // namespace chorus::chat
