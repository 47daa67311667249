#include "engine/chat/lexer.h"

#include <charconv>
#include <cstdlib>

#include "engine/chat/utf8.h"

namespace chorus::chat {
namespace {

// Python's `\s` and str.isspace() on the ASCII range.
bool is_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python "unicode-escape" decoding of a string literal's body.
Result<std::string> unescape(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) { out.push_back(body[i]); continue; }
    const char e = body[++i];
    switch (e) {
      case '\n': continue;  // line continuation
      case '\\': out.push_back('\\'); continue;
      case '\'': out.push_back('\''); continue;
      case '"': out.push_back('"'); continue;
      case 'a': out.push_back('\a'); continue;
      case 'b': out.push_back('\b'); continue;
      case 'f': out.push_back('\f'); continue;
      case 'n': out.push_back('\n'); continue;
      case 'r': out.push_back('\r'); continue;
      case 't': out.push_back('\t'); continue;
      case 'v': out.push_back('\v'); continue;
      default: break;
    }
    if (e >= '0' && e <= '7') {
      uint32_t v = 0;
      size_t k = 0;
      for (; k < 3 && i + k < body.size() && body[i + k] >= '0' && body[i + k] <= '7'; ++k)
        v = v * 8 + static_cast<uint32_t>(body[i + k] - '0');
      i += k - 1;
      utf8::append(out, v);
      continue;
    }
    const int n_hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (n_hex == 0) { out.push_back('\\'); out.push_back(e); continue; }  // kept verbatim
    uint32_t v = 0;
    for (int k = 1; k <= n_hex; ++k) {
      const int h = i + k < body.size() ? hex_value(body[i + k]) : -1;
      if (h < 0) return make_error("truncated \\" + std::string(1, e) + " escape in string literal");
      v = v * 16 + static_cast<uint32_t>(h);
    }
    if (v > 0x10FFFF) return make_error("illegal Unicode character in string literal");
    i += static_cast<size_t>(n_hex);
    utf8::append(out, v);
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}
  Result<std::vector<Token>> run();

 private:
  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the previous match ended with a newline
  std::vector<Token> tokens_;
  std::vector<char> brackets_;  // closers expected, innermost last

  Error fail(const std::string& what) const {
    return make_error("template syntax error: " + what + " (line " + std::to_string(line_) + ")");
  }
  void emit(TokenType type, std::string text = {}) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }
  void advance_to(size_t end) {
    for (size_t i = pos_; i < end; ++i) line_ += src_[i] == '\n';
    line_starting_ = end > pos_ && src_[end - 1] == '\n';
    pos_ = end;
  }
  void skip_spaces_after(size_t& end) const {
    while (end < src_.size() && is_space(src_[end])) ++end;
  }
  void emit_text(std::string text, char strip_sign, bool lstrip_applies);
  bool try_raw_block(const std::string& text, char open_sign, size_t after_open);
  Status lex_comment(size_t content_start);
  Status lex_tag(bool is_block);
  bool try_tag_end(bool is_block);
  Status lex_token();
  Status lex_number();
  Status lex_string();
  Status lex_operator();
};

void Lexer::emit_text(std::string text, char strip_sign, bool lstrip_applies) {
  if (strip_sign == '-') {
    while (!text.empty() && is_space(text.back())) text.pop_back();
  } else if (strip_sign != '+' && lstrip_applies) {
    // lstrip_blocks: drop the tag's indentation when only spaces precede it on its line.
    const size_t nl = text.rfind('\n');
    const size_t line_pos = nl == std::string::npos ? 0 : nl + 1;
    if (line_pos > 0 || line_starting_) {
      bool only_space = line_pos < text.size();
      for (size_t i = line_pos; i < text.size(); ++i) only_space &= is_space(text[i]);
      if (only_space) text.resize(line_pos);
    }
  }
  if (!text.empty()) emit(TokenType::kText, std::move(text));
}

// `{% raw %}...{% endraw %}`: the body is plain text. Returns false when this is no raw tag.
bool Lexer::try_raw_block(const std::string& text, char open_sign, size_t after_open) {
  size_t p = after_open;
  while (p < src_.size() && is_space(src_[p])) ++p;
  if (src_.compare(p, 3, "raw") != 0) return false;
  p += 3;
  while (p < src_.size() && is_space(src_[p])) ++p;
  size_t body = std::string::npos;
  if (src_.compare(p, 3, "-%}") == 0) { body = p + 3; skip_spaces_after(body); }
  else if (src_.compare(p, 2, "%}") == 0) body = p + 2;
  if (body == std::string::npos) return false;
  for (size_t q = src_.find("{%", body); q != std::string::npos; q = src_.find("{%", q + 1)) {
    size_t r = q + 2;
    const char sign = (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) ? src_[r++] : 0;
    while (r < src_.size() && is_space(src_[r])) ++r;
    if (src_.compare(r, 6, "endraw") != 0) continue;
    r += 6;
    while (r < src_.size() && is_space(src_[r])) ++r;
    size_t end = std::string::npos;
    if (src_.compare(r, 3, "+%}") == 0) end = r + 3;
    else if (src_.compare(r, 3, "-%}") == 0) { end = r + 3; skip_spaces_after(end); }
    else if (src_.compare(r, 2, "%}") == 0) { end = r + 2; if (end < src_.size() && src_[end] == '\n') ++end; }
    if (end == std::string::npos) continue;
    emit_text(text, open_sign, true);
    advance_to(body);
    emit_text(src_.substr(body, q - body), sign, true);
    advance_to(end);
    return true;
  }
  return false;
}

Status Lexer::lex_comment(size_t content_start) {
  const size_t close = src_.find("#}", content_start);
  if (close == std::string::npos) return fail("missing end of comment tag");
  const char sign = close > content_start ? src_[close - 1] : 0;
  size_t end = close + 2;
  if (sign == '-') skip_spaces_after(end);
  else if (sign != '+' && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
  advance_to(end);
  return Ok{};
}

// Checks for the closing `%}` / `}}` (only outside brackets, as jinja2 does).
bool Lexer::try_tag_end(bool is_block) {
  if (!brackets_.empty()) return false;
  const char* close = is_block ? "%}" : "}}";
  size_t end = std::string::npos;
  if (src_.compare(pos_, 1, "-") == 0 && src_.compare(pos_ + 1, 2, close) == 0) {
    end = pos_ + 3;
    skip_spaces_after(end);
  } else if (is_block && src_.compare(pos_, 3, "+%}") == 0) {
    end = pos_ + 3;
  } else if (src_.compare(pos_, 2, close) == 0) {
    end = pos_ + 2;
    if (is_block && end < src_.size() && src_[end] == '\n') ++end;  // trim_blocks
  }
  if (end == std::string::npos) return false;
  emit(is_block ? TokenType::kBlockEnd : TokenType::kVariableEnd);
  advance_to(end);
  return true;
}

Status Lexer::lex_tag(bool is_block) {
  while (true) {
    if (pos_ >= src_.size()) return fail(is_block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
    if (try_tag_end(is_block)) return Ok{};
    if (is_space(src_[pos_])) {
      size_t end = pos_;
      skip_spaces_after(end);
      advance_to(end);
      continue;
    }
    CHORUS_TRY(lex_token());
  }
}

Status Lexer::lex_token() {
  const char c = src_[pos_];
  if (is_digit(c)) return lex_number();
  if (is_name_start(c)) {
    size_t end = pos_;
    while (end < src_.size() && is_name_char(src_[end])) ++end;
    emit(TokenType::kName, src_.substr(pos_, end - pos_));
    advance_to(end);
    return Ok{};
  }
  if (c == '\'' || c == '"') return lex_string();
  return lex_operator();
}

Status Lexer::lex_number() {
  size_t end = pos_;
  auto digits = [&](size_t& p) {
    const size_t start = p;
    while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p > start && p + 1 < src_.size() && is_digit(src_[p + 1])))) ++p;
    return p > start;
  };
  digits(end);
  bool is_float = false;
  const bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';  // `x.0.1` is two subscripts
  if (!after_dot && end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
    ++end;
    digits(end);
    is_float = true;
  }
  if (!after_dot && end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
    size_t e = end + 1;
    if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
    if (digits(e)) { end = e; is_float = true; }
  }
  std::string text;
  for (size_t i = pos_; i < end; ++i) if (src_[i] != '_') text.push_back(src_[i]);
  Token t;
  t.line = line_;
  t.text = text;
  if (is_float) {
    t.type = TokenType::kFloat;
    t.float_value = std::strtod(text.c_str(), nullptr);
  } else {
    t.type = TokenType::kInteger;
    auto res = std::from_chars(text.data(), text.data() + text.size(), t.int_value);
    if (res.ec != std::errc()) return fail("integer literal too large");
  }
  tokens_.push_back(std::move(t));
  advance_to(end);
  return Ok{};
}

Status Lexer::lex_string() {
  const char quote = src_[pos_];
  size_t p = pos_ + 1;
  while (p < src_.size() && src_[p] != quote) p += src_[p] == '\\' ? 2 : 1;
  if (p >= src_.size()) return fail("unexpected char '" + std::string(1, quote) + "'");
  auto value = unescape(std::string_view(src_).substr(pos_ + 1, p - pos_ - 1));
  if (!value.ok()) return fail(value.message());
  emit(TokenType::kString, std::move(value).value());
  advance_to(p + 1);
  return Ok{};
}

Status Lexer::lex_operator() {
  static const char* const kTwoChar[] = {"//", "**", "==", "!=", ">=", "<="};
  for (const char* op : kTwoChar) {
    if (src_.compare(pos_, 2, op) == 0) {
      emit(TokenType::kOperator, op);
      advance_to(pos_ + 2);
      return Ok{};
    }
  }
  const char c = src_[pos_];
  static const std::string kOneChar = "+-/*%~[](){}><=.:|,;";
  if (kOneChar.find(c) == std::string::npos) return fail("unexpected char '" + std::string(1, c) + "'");
  if (c == '(' || c == '[' || c == '{') brackets_.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
  if (c == ')' || c == ']' || c == '}') {
    if (brackets_.empty()) return fail("unexpected '" + std::string(1, c) + "'");
    if (brackets_.back() != c)
      return fail("unexpected '" + std::string(1, c) + "', expected '" + std::string(1, brackets_.back()) + "'");
    brackets_.pop_back();
  }
  emit(TokenType::kOperator, std::string(1, c));
  advance_to(pos_ + 1);
  return Ok{};
}

Result<std::vector<Token>> Lexer::run() {
  while (pos_ < src_.size()) {
    size_t open = src_.find('{', pos_);
    while (open != std::string::npos && open + 1 < src_.size() && src_[open + 1] != '{' &&
           src_[open + 1] != '%' && src_[open + 1] != '#')
      open = src_.find('{', open + 1);
    if (open == std::string::npos || open + 1 >= src_.size()) {
      emit_text(src_.substr(pos_), 0, false);
      advance_to(src_.size());
      break;
    }
    const char kind = src_[open + 1];
    size_t after = open + 2;
    const char sign = (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) ? src_[after++] : 0;
    std::string text = src_.substr(pos_, open - pos_);
    if (kind == '%' && try_raw_block(text, sign, after)) continue;
    emit_text(std::move(text), sign, kind != '{');
    advance_to(after);
    if (kind == '#') { CHORUS_TRY(lex_comment(after)); continue; }
    emit(kind == '%' ? TokenType::kBlockBegin : TokenType::kVariableBegin);
    brackets_.clear();
    CHORUS_TRY(lex_tag(kind == '%'));
  }
  emit(TokenType::kEnd);
  return std::move(tokens_);
}

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace chorus::chat
