#pragma once
// Minimal `--name value` / `--flag` parser shared by the sub-commands. Unknown options are
// an error so that typos never silently change behaviour.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/core/result.h"

namespace chorus::cli {

struct Args {
  std::string command;
  std::map<std::string, std::string> options;  // "--model" -> "x.gguf"
  std::set<std::string> flags;                 // "--verbose"
  std::vector<std::string> positional;

  std::optional<std::string> get(const std::string& name) const;
  bool has_flag(const std::string& name) const { return flags.count(name) != 0; }
};

// `valued` names the options that take a value, `flag_names` those that do not.
Result<Args> parse_args(int argc, char** argv, int first, const std::set<std::string>& valued,
                        const std::set<std::string>& flag_names);

// Prints "chorus-cli: <message>" to stderr and returns the exit code for bad input.
int fail(const std::string& message, int exit_code = 1);

Result<std::vector<int32_t>> parse_token_list(const std::string& text);
Result<long> parse_int(const std::string& name, const std::string& text, long lo, long hi);

}  // namespace chorus::cli
