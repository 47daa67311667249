#pragma once
// SentencePiece-style ("llama" vocab) encoding: the text, with spaces already escaped to
// U+2581, starts as one symbol per UTF-8 character; the adjacent pair whose concatenation is
// the vocabulary piece of highest score merges first (leftmost among equal scores), until no
// pair forms a piece. Symbols that are not pieces fall back to byte tokens <0xNN>, or to the
// unknown token when the vocabulary has no byte tokens.
//
// Control, unknown and byte tokens never form from text. encode() is const and thread-safe.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/tokenizer/vocab.h"

namespace chorus::tok {

inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 '▁'

class SpmModel {
 public:
  static Result<SpmModel> build(const Vocab& vocab);

  void encode(std::string_view escaped, std::vector<int32_t>& out) const;
  int32_t byte_token(uint8_t b) const { return byte_token_[b]; }

 private:
  struct Piece {
    int32_t id;
    float score;
  };
  const Piece* find_piece(std::string_view text) const;
  void emit_symbol(std::string_view text, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, Piece, StringHash, std::equal_to<>> pieces_;
  std::array<int32_t, 256> byte_token_{};
  int32_t unk_id_ = -1;
};

// Replaces each ' ' with U+2581.
std::string spm_escape_spaces(std::string_view text);

}  // namespace chorus::tok
