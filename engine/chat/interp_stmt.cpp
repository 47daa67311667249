// Statement execution: output, control flow, assignment, macros and blocks.
#include "engine/chat/interpreter.h"
#include "engine/chat/value_ops.h"

#define EVAL_TRY(var, expr)                                  \
  auto var##_result = (expr);                                \
  if (!var##_result.ok()) return var##_result.error();       \
  auto var = std::move(var##_result).value()

namespace chorus::chat {

Interpreter::~Interpreter() {
  for (Value& ns : namespaces_) ns.mutable_dict().entries.clear();
}

Result<std::string> Interpreter::render(const Template& tmpl, const Value& context) {
  auto globals = std::make_shared<Scope>(nullptr);
  install_globals(*globals, options_);
  auto root = std::make_shared<Scope>(globals);
  if (context.is_dict()) {
    for (const auto& [key, value] : context.dict_data().entries)
      if (key.is_string()) root->set(key.as_string(), value);
  }
  return capture(tmpl.body, root);
}

Status Interpreter::write(std::string_view text) {
  if (out_->size() + text.size() > options_.max_output_bytes)
    return make_error("template output exceeds the size limit");
  out_->append(text);
  return Ok{};
}

Result<std::string> Interpreter::capture(const Body& body, const ScopePtr& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  auto flow = exec_body(body, scope);
  out_ = saved;
  if (!flow.ok()) return flow.error();
  return buffer;
}

Result<Flow> Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  DepthGuard guard(*this);
  if (guard.too_deep()) return make_error("template nesting too deep");
  for (const auto& node : body) {
    EVAL_TRY(flow, exec(*node, scope));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Flow> Interpreter::exec(const Node& node, const ScopePtr& scope) {
  CHORUS_TRY(step());
  switch (node.kind) {
    case NodeKind::kText: CHORUS_TRY(write(node.text)); break;
    case NodeKind::kOutput: {
      EVAL_TRY(v, eval(*node.expr, scope));
      CHORUS_TRY(write(to_str(v)));
      break;
    }
    case NodeKind::kIf: return exec_if(node, scope);
    case NodeKind::kFor: return exec_for(node, scope);
    case NodeKind::kSet: CHORUS_TRY(exec_set(node, scope)); break;
    case NodeKind::kSetBlock: CHORUS_TRY(exec_set_block(node, scope)); break;
    case NodeKind::kMacro:
      scope->set(node.name, Value::callable(std::make_shared<MacroCallable>(node, scope, node.name)));
      break;
    case NodeKind::kCallBlock: CHORUS_TRY(exec_call_block(node, scope)); break;
    case NodeKind::kFilterBlock: CHORUS_TRY(exec_filter_block(node, scope)); break;
    case NodeKind::kWith: return exec_with(node, scope);
    case NodeKind::kScope: {
      EVAL_TRY(flow, exec_body(node.body, std::make_shared<Scope>(scope)));
      return flow;
    }
    case NodeKind::kBreak: return Flow::kBreak;
    case NodeKind::kContinue: return Flow::kContinue;
  }
  return Flow::kNormal;
}

Result<Flow> Interpreter::exec_if(const Node& node, const ScopePtr& scope) {
  for (size_t i = 0; i < node.conditions.size(); ++i) {
    EVAL_TRY(cond, eval(*node.conditions[i], scope));
    if (cond.truthy()) return exec_body(node.bodies[i], scope);
  }
  return exec_body(node.else_body, scope);
}

namespace {

Value make_loop_object(const std::vector<Value>& items, size_t i) {
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  Value loop = Value::dict();
  DictData& d = loop.mutable_dict();
  d.entries.reserve(12);
  // Keys are distinct by construction, so append without the duplicate scan: this runs
  // once per iteration of every loop.
  d.append_new(Value::string("index"), Value::integer(k + 1));
  d.append_new(Value::string("index0"), Value::integer(k));
  d.append_new(Value::string("revindex"), Value::integer(n - k));
  d.append_new(Value::string("revindex0"), Value::integer(n - k - 1));
  d.append_new(Value::string("first"), Value::boolean(k == 0));
  d.append_new(Value::string("last"), Value::boolean(k + 1 == n));
  d.append_new(Value::string("length"), Value::integer(n));
  d.append_new(Value::string("depth"), Value::integer(1));
  d.append_new(Value::string("depth0"), Value::integer(0));
  if (k > 0) d.append_new(Value::string("previtem"), items[i - 1]);
  if (k + 1 < n) d.append_new(Value::string("nextitem"), items[i + 1]);
  return loop;
}

// loop.cycle('odd', 'even'): picks by the current index.
class LoopCycle : public Callable {
 public:
  explicit LoopCycle(size_t index0) : index0_(index0) {}
  Result<Value> call(Interpreter&, const CallArgs& args) const override {
    if (args.positional.empty()) return make_error("no items for cycling given");
    return args.positional[index0_ % args.positional.size()];
  }
  std::string name() const override { return "cycle"; }

 private:
  size_t index0_;
};

}  // namespace

Result<Flow> Interpreter::exec_for(const Node& node, const ScopePtr& scope) {
  EVAL_TRY(iterable, eval(*node.expr, scope));
  EVAL_TRY(all_items, iterate(iterable));
  std::vector<Value> items;
  if (node.condition) {
    // `for x in xs if cond`: filtered first, so loop.length counts only kept items.
    for (auto& item : all_items) {
      auto test_scope = std::make_shared<Scope>(scope);
      CHORUS_TRY(assign(node.target, item, test_scope));
      EVAL_TRY(keep, eval(*node.condition, test_scope));
      if (keep.truthy()) items.push_back(std::move(item));
    }
  } else {
    items = std::move(all_items);
  }
  if (items.empty()) return exec_body(node.else_body, std::make_shared<Scope>(scope));
  for (size_t i = 0; i < items.size(); ++i) {
    CHORUS_TRY(step());
    auto iteration = std::make_shared<Scope>(scope);
    Value loop = make_loop_object(items, i);
    loop.mutable_dict().append_new(Value::string("cycle"), Value::callable(std::make_shared<LoopCycle>(i)));
    iteration->set("loop", std::move(loop));
    CHORUS_TRY(assign(node.target, items[i], iteration));
    EVAL_TRY(flow, exec_body(node.body, iteration));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Status Interpreter::assign(const AssignTarget& target, const Value& value, const ScopePtr& scope) {
  if (!target.attribute.empty()) {
    const Value* ns = scope->lookup(target.names[0]);
    if (!ns || !ns->is_namespace()) return make_error("cannot assign attribute on non-namespace object");
    Value handle = *ns;  // shares the namespace's storage
    handle.mutable_dict().set(Value::string(target.attribute), value);
    return Ok{};
  }
  if (!target.is_tuple) {
    scope->set(target.names[0], value);
    return Ok{};
  }
  auto items = iterate(value);
  if (!items.ok()) return make_error("cannot unpack non-iterable " + type_name(value) + " object");
  if (items->size() != target.names.size()) {
    return make_error(items->size() > target.names.size()
                          ? "too many values to unpack (expected " + std::to_string(target.names.size()) + ")"
                          : "not enough values to unpack (expected " + std::to_string(target.names.size()) +
                                ", got " + std::to_string(items->size()) + ")");
  }
  for (size_t i = 0; i < target.names.size(); ++i) scope->set(target.names[i], (*items)[i]);
  return Ok{};
}

Status Interpreter::exec_set(const Node& node, const ScopePtr& scope) {
  EVAL_TRY(value, eval(*node.expr, scope));
  return assign(node.target, value, scope);
}

Status Interpreter::exec_set_block(const Node& node, const ScopePtr& scope) {
  EVAL_TRY(text, capture(node.body, std::make_shared<Scope>(scope)));
  Value value = Value::string(std::move(text));
  if (node.filter) {
    EVAL_TRY(filtered, eval_filter(*node.filter, scope, &value));
    value = std::move(filtered);
  }
  return assign(node.target, value, scope);
}

Status Interpreter::exec_call_block(const Node& node, const ScopePtr& scope) {
  Value caller = Value::callable(std::make_shared<MacroCallable>(node, scope, "caller"));
  EVAL_TRY(result, eval_call(*node.expr, scope, &caller));
  return write(to_str(result));
}

Status Interpreter::exec_filter_block(const Node& node, const ScopePtr& scope) {
  EVAL_TRY(text, capture(node.body, std::make_shared<Scope>(scope)));
  Value value = Value::string(std::move(text));
  EVAL_TRY(filtered, eval_filter(*node.filter, scope, &value));
  return write(to_str(filtered));
}

Result<Flow> Interpreter::exec_with(const Node& node, const ScopePtr& scope) {
  auto inner = std::make_shared<Scope>(scope);
  for (size_t i = 0; i < node.targets.size(); ++i) {
    EVAL_TRY(value, eval(*node.values[i], scope));
    CHORUS_TRY(assign(node.targets[i], value, inner));
  }
  return exec_body(node.body, inner);
}

Result<Value> MacroCallable::call(Interpreter& interp, const CallArgs& args) const {
  ScopePtr closure = closure_.lock();
  if (!closure) return make_error("macro '" + name_ + "' called after its defining scope ended");
  auto frame = std::make_shared<Scope>(closure);
  const auto& params = node_.params;
  for (size_t i = 0; i < params.size(); ++i) {
    if (const Value* v = args.find(params[i].name, i)) {
      frame->set(params[i].name, *v);
    } else if (params[i].default_value) {
      EVAL_TRY(def, interp.eval(*params[i].default_value, frame));
      frame->set(params[i].name, std::move(def));
    } else {
      frame->set(params[i].name, Value::undefined("parameter '" + params[i].name + "' was not provided"));
    }
  }
  std::vector<Value> extra_positional;
  for (size_t i = params.size(); i < args.positional.size(); ++i) extra_positional.push_back(args.positional[i]);
  Value extra_keywords = Value::dict();
  for (const auto& [key, value] : args.keyword) {
    bool is_param = key == "caller";
    for (const auto& p : params) is_param |= p.name == key;
    if (!is_param) extra_keywords.dict_set(key, value);
    if (key == "caller") frame->set("caller", value);
  }
  frame->set("varargs", Value::tuple(std::move(extra_positional)));
  frame->set("kwargs", std::move(extra_keywords));
  EVAL_TRY(text, interp.capture(node_.body, frame));
  return Value::string(std::move(text));
}

}  // namespace chorus::chat
