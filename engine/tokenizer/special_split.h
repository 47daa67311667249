#pragma once
// Finds special-token text in the input before normal tokenization. The text is scanned
// once, left to right; at each position the longest special token that matches (and is
// allowed by the SpecialParsing mode, see vocab.h) wins. Candidates are bucketed by first
// byte, so text without special-token lead bytes costs one table lookup per byte.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace chorus::tok {

struct Fragment {
  std::string_view text;  // raw text to tokenize normally, when token < 0
  int32_t token = -1;     // a matched special token
};

class SpecialSplitter {
 public:
  explicit SpecialSplitter(const Vocab& vocab);

  void split(std::string_view text, SpecialParsing mode, std::vector<Fragment>& out) const;

 private:
  struct Entry {
    std::string text;
    int32_t id;
    bool in_user_text;  // matched with SpecialParsing::Off too (non-reserved user-defined)
    bool rstrip;        // drop the whitespace that follows a match
  };
  const Entry* match_at(std::string_view rest, SpecialParsing mode) const;

  std::vector<Entry> entries_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // indices into entries_, longest first
};

}  // namespace chorus::tok
