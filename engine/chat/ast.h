#pragma once
// Syntax tree of a parsed template. Expressions and statements are each one struct with a
// kind tag; the fields a kind uses are listed next to it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/value.h"

namespace chorus::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  kLiteral,    // literal
  kName,       // name
  kList,       // args = items
  kTuple,      // args = items
  kDict,       // args = key0, value0, key1, value1, ...
  kGetAttr,    // operand.name
  kGetItem,    // operand[args[0]]
  kSlice,      // args = start, stop, step (each may be null)
  kCall,       // operand(args, kwargs)
  kFilter,     // operand|name(args, kwargs); operand null inside {% filter %}
  kTest,       // operand is name(args, kwargs)
  kNot, kNeg, kPos,     // operand
  kBinary,     // operand op args[0]
  kAnd, kOr,   // operand, args[0]
  kCompare,    // operand (op args[i])...: chained like Python
  kCondition,  // args[1] if args[0] else args[2] (args[2] may be null)
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  Value literal;
  std::string name;
  ExprPtr operand;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr star_args, star_kwargs;  // f(*a, **k)
  BinaryOp binary_op = BinaryOp::kAdd;
  std::vector<CompareOp> compare_ops;
  // A filter or test unknown at parse time inside an `if` (jinja2 then fails only when
  // the expression actually runs); elsewhere an unknown name is a syntax error.
  bool unknown = false;
};

// Left side of `set`, `for`, `with`: a name, `ns.attr`, or a tuple of names.
struct AssignTarget {
  std::vector<std::string> names;  // one name unless is_tuple
  bool is_tuple = false;
  std::string attribute;           // `ns.attr`: names[0] is the namespace variable
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

enum class NodeKind {
  kText,        // text
  kOutput,      // expr
  kIf,          // conditions[i] -> bodies[i]; else_body
  kFor,         // target in expr [if condition]; body; else_body
  kSet,         // target = expr
  kSetBlock,    // target = rendered body, through filter (may be null)
  kMacro,       // name(params = defaults); body
  kCallBlock,   // expr is the call; params are caller's; body is caller's body
  kFilterBlock, // filter applied to rendered body
  kWith,        // targets[i] = values[i]; body
  kScope,       // body (e.g. {% generation %})
  kBreak, kContinue,
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Node {
  NodeKind kind = NodeKind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  ExprPtr filter;
  AssignTarget target;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::string name;
  std::vector<MacroParam> params;
  std::vector<AssignTarget> targets;
  std::vector<ExprPtr> values;
};

struct Template {
  Body body;
};

}  // namespace chorus::chat
