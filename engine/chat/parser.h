#pragma once
// Tokens -> syntax tree, following jinja2's grammar and operator precedence.
#include <memory>
#include <string_view>

#include "engine/chat/ast.h"
#include "engine/core/result.h"

namespace chorus::chat {

struct ParseLimits {
  int max_depth = 200;  // nesting of expressions and blocks; deeper input is rejected
};

Result<std::shared_ptr<const Template>> parse_template(std::string_view source,
                                                       const ParseLimits& limits = {});

// Names known at parse time; jinja2 rejects unknown filters and tests while compiling.
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

}  // namespace chorus::chat
