#pragma once
// Registry of jinja2's built-in filters and tests (plus Hugging Face's `tojson`). Filters
// live in filters_text.cpp and filters_seq.cpp, tests in jinja_tests.cpp.
#include <map>
#include <string>
#include <string_view>

#include "engine/chat/value.h"

namespace chorus::chat {

using FilterFn = Result<Value> (*)(Interpreter& interp, const Value& operand, const CallArgs& args);
using TestFn = Result<bool> (*)(Interpreter& interp, const Value& operand, const CallArgs& args);

using FilterTable = std::map<std::string, FilterFn, std::less<>>;
using TestTable = std::map<std::string, TestFn, std::less<>>;

void add_text_filters(FilterTable& table);
void add_sequence_filters(FilterTable& table);
void add_tests(TestTable& table);

FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// Shared helpers for filter implementations.
// jinja2's attribute getter for `attribute='a.b.0'` arguments.
Result<Value> get_attribute_path(const Value& item, const Value& path);
// Python's str() the way jinja2's soft_str applies it (Undefined prints as "").
inline std::string soft_str(const Value& v) { return to_str(v); }

}  // namespace chorus::chat
