#pragma once
// Byte-level BPE (GPT-2 style) over one pre-tokenized word.
//
// Work happens in token ids, not text: a word starts as one symbol per byte (the token of
// that byte's GPT-2 code point) and adjacent pairs merge by the rank of their merge rule
// (lower rank first, leftmost first among equal ranks), using a min-heap of candidate pairs
// over a doubly linked list of symbols: O(n log n) per word even for megabyte-long words.
// Merge rules whose parts or result are not tokens can never fire and are dropped at load.
//
// encode_word() is const and thread-safe (the word cache locks internally).
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/result.h"
#include "engine/tokenizer/vocab.h"
#include "engine/tokenizer/word_cache.h"

namespace chorus::tok {

enum class WholeWordLookup { Off, On };  // On: a word that is itself a token skips merging

class BpeModel {
 public:
  static Result<BpeModel> build(const Vocab& vocab, WholeWordLookup whole_words);

  // Appends the ids of `word` (raw bytes, not byte-mapped) to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  // Token of a raw byte; -1 when the vocabulary lacks it.
  int32_t byte_token(uint8_t b) const { return byte_token_[b]; }
  size_t n_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Merge* find_merge(int32_t left, int32_t right) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_token_{};
  TextToId raw_to_id_;  // raw bytes of normal tokens (whole-word lookup)
  WholeWordLookup whole_words_ = WholeWordLookup::Off;
  std::unique_ptr<WordCache> cache_ = std::make_unique<WordCache>();
};

}  // namespace chorus::tok
