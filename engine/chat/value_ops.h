#pragma once
// Python semantics of operators, attribute access, subscripts and iteration on Values,
// filtered through jinja2's sandbox (a missing attribute is Undefined; touching Undefined
// beyond printing or testing it is an UndefinedError).
#include <string>
#include <vector>

#include "engine/chat/ast.h"
#include "engine/chat/value.h"

namespace chorus::chat {

Error undefined_error(const Value& undefined);
// markupsafe's escape(): & < > " ' as HTML entities.
std::string html_escape(std::string_view text);

// `obj.name`: Python attribute first (methods), then the item; Undefined when neither.
Result<Value> get_attribute(const Value& obj, const std::string& name);
// `obj[key]`: the item first, then an attribute named `key`; Undefined when neither.
Result<Value> get_item(const Value& obj, const Value& key);
Result<Value> slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);

Result<Value> binary_op(BinaryOp op, const Value& a, const Value& b, size_t max_size);
Result<bool> contains(const Value& container, const Value& item);
// Items of a for loop over the value: list items, dict keys, one-character strings.
Result<std::vector<Value>> iterate(const Value& v);

// A method bound to its receiver (`"a,b".split`), or Undefined if `name` is none of the
// receiver type's methods. Mutating methods come back as a callable raising SecurityError.
Value bound_method(const Value& receiver, const std::string& name);

// Python's `fmt % args` for strings.
Result<std::string> percent_format(const std::string& fmt, const Value& args);

// Python int()/float() parsing of strings, as the `int`/`float` filters need.
bool parse_python_int(const std::string& text, int base, int64_t* out);
bool parse_python_float(const std::string& text, double* out);

}  // namespace chorus::chat
