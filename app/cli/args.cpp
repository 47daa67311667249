#include "app/cli/args.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace chorus::cli {

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = options.find(name);
  if (it == options.end()) return std::nullopt;
  return it->second;
}

Result<Args> parse_args(int argc, char** argv, int first, const std::set<std::string>& valued,
                        const std::set<std::string>& flag_names) {
  Args a;
  for (int k = first; k < argc; ++k) {
    std::string s = argv[k];
    if (s.rfind("--", 0) == 0) {
      std::string name = s, value;
      bool inline_value = false;
      if (auto eq = s.find('='); eq != std::string::npos) {
        name = s.substr(0, eq);
        value = s.substr(eq + 1);
        inline_value = true;
      }
      if (valued.count(name)) {
        if (!inline_value) {
          if (k + 1 >= argc) return make_error("option " + name + " needs a value");
          value = argv[++k];
        }
        a.options[name] = value;
      } else if (flag_names.count(name) && !inline_value) {
        a.flags.insert(name);
      } else {
        return make_error("unknown option " + name);
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

int fail(const std::string& message, int exit_code) {
  std::fprintf(stderr, "chorus-cli: %s\n", message.c_str());
  return exit_code;
}

Result<std::vector<int32_t>> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (part.empty()) return make_error("--tokens: empty token id in '" + text + "'");
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > INT32_MAX) {
      return make_error("--tokens: '" + part + "' is not a token id (a non-negative integer)");
    }
    ids.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return ids;
}

Result<long> parse_int(const std::string& name, const std::string& text, long lo, long hi) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || text.empty() || *end != '\0' || v < lo || v > hi) {
    return make_error(name + ": '" + text + "' is not an integer in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  }
  return v;
}

}  // namespace chorus::cli
