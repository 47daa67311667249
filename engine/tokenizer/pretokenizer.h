#pragma once
// Pre-tokenization for byte-level BPE: the regular expressions of each `tokenizer.ggml.pre`
// family split text into words that BPE then encodes independently.
//
// A family is a list of expressions applied in turn: expression k splits every piece that
// expression k-1 produced into its matches and the text between them (both kept), and each
// match sees only its own piece, so `$` and `(?!\S)` stop at the piece's end. This is the
// convention of llama.cpp, whose test vectors are our reference.
//
// Matching uses PCRE2 with UTF + UCP, so \p{L}, \p{N}, \s follow the Unicode database.
// Patterns are compiled (and JIT-compiled when available) once per PreTokenizer; split() is
// const and allocates its own match data, so one PreTokenizer serves many threads.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace chorus::tok {

struct PreTokenizerFamily {
  const char* family;                   // "llama3", "gpt2", ...
  std::vector<const char*> names;       // tokenizer.ggml.pre values that select it
  std::vector<const char*> patterns;    // applied in order
  bool ignore_merges = false;           // a word that is a whole token skips BPE
};

const std::vector<PreTokenizerFamily>& pre_tokenizer_families();
// "default, gpt-2, starcoder, ..." for error messages.
std::string supported_pre_tokenizer_names();

class PreTokenizer {
 public:
  static Result<PreTokenizer> create(const std::string& pre_name);
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Appends the words of `text` to `words` (views into `text`, in order, covering it
  // exactly). Bytes that are not valid UTF-8 become one-byte words of their own.
  void split(std::string_view text, std::vector<std::string_view>& words) const;

  const std::string& family() const { return family_; }
  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Compiled;
  PreTokenizer() = default;
  void split_valid(std::string_view text, std::vector<std::string_view>& words) const;

  std::string family_;
  bool ignore_merges_ = false;
  std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace chorus::tok
