#pragma once
// Python's two string formatting mini-languages: `str.format()` and printf-style `%`.
#include <string>

#include "engine/chat/value.h"

namespace chorus::chat {

Result<std::string> brace_format(const std::string& fmt, const CallArgs& args);

}  // namespace chorus::chat
