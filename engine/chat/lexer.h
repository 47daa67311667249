#pragma once
// Template source -> tokens, following jinja2's lexer as Hugging Face configures it:
// trim_blocks (a newline right after a block or comment tag is dropped), lstrip_blocks
// (spaces and tabs from the line start up to a block or comment tag are dropped),
// `-`/`+` whitespace control, comments removed, {% raw %} passed through as text, CR/CRLF
// normalised to LF and one trailing newline removed (keep_trailing_newline=False).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace chorus::chat {

enum class TokenType : uint8_t {
  kText, kVariableBegin, kVariableEnd, kBlockBegin, kBlockEnd,
  kName, kString, kInteger, kFloat, kOperator, kEnd,
};

struct Token {
  TokenType type = TokenType::kEnd;
  std::string text;  // text data, name, operator, or the decoded string literal
  int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;
};

Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace chorus::chat
