#pragma once
// JSON text <-> template values, with Python's json module as the reference: objects keep
// key order, integers stay integers, and dump_json() reproduces json.dumps() byte for byte
// (separators, indent, sort_keys, ensure_ascii, float repr, NaN/Infinity).
#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/value.h"
#include "engine/core/result.h"

namespace chorus::chat {

Result<Value> parse_json(std::string_view text);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // nullopt: one line; "" or "  ": one item per line
  std::string item_separator = ", ";  // Python's default when indent is None
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};

Result<std::string> dump_json(const Value& value, const JsonDumpOptions& options = {});

}  // namespace chorus::chat
