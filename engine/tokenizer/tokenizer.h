#pragma once
// Text <-> token ids for the vocabularies GGUF files carry: byte-level BPE ("gpt2") with the
// pre-tokenizer of its `tokenizer.ggml.pre` family, and SentencePiece-style ("llama") with
// byte fallback.
//
// Thread safety: a Tokenizer is immutable after construction except for an internal,
// internally locked word cache, so every const member (encode, decode, ...) may be called
// from several threads at once. StreamingDetokenizer is per stream and not shared.
//
// encode() adds no BOS/EOS: callers that want them ask add_bos()/bos_id(). decode() returns
// the exact bytes of the pieces (possibly invalid UTF-8 when cut mid-character); use
// StreamingDetokenizer or utf8_sanitize() for display.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/tokenizer/vocab.h"

namespace chorus::gguf {
class Reader;
}

namespace chorus::tok {

class BpeModel;
class SpmModel;
class PreTokenizer;
class SpecialSplitter;

enum class ControlTokens { Hide, Render };  // decode control tokens to "" or to their text

struct DecodeOptions {
  ControlTokens control = ControlTokens::Hide;
  // SentencePiece vocabularies with a space prefix drop the one leading space that encode()
  // added, at the start of the text. False when decoding a continuation.
  bool at_start = true;
};

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const gguf::Reader& reader);
  // From in-memory data (tests, synthetic models).
  static Result<std::unique_ptr<Tokenizer>> from_vocab(VocabData data);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, SpecialParsing special = SpecialParsing::Off) const;
  void encode_into(std::string_view text, SpecialParsing special, std::vector<int32_t>& out) const;

  // The bytes token `id` stands for ("" for an invalid id and, unless rendered, control
  // tokens). No leading-space removal: see decode().
  std::string token_to_bytes(int32_t id, ControlTokens control = ControlTokens::Hide) const;
  std::string decode(std::span<const int32_t> ids, DecodeOptions options = {}) const;

  int32_t n_vocab() const { return vocab_.n_tokens(); }
  int32_t bos_id() const { return vocab_.data().bos_id; }
  int32_t eos_id() const { return vocab_.data().eos_id; }
  int32_t eot_id() const { return vocab_.data().eot_id; }
  int32_t unk_id() const { return vocab_.data().unk_id; }
  int32_t pad_id() const { return vocab_.data().pad_id; }
  bool add_bos() const { return vocab_.add_bos() && bos_id() >= 0; }
  bool add_eos() const { return vocab_.add_eos() && eos_id() >= 0; }
  // EOS, EOT, EOM and control tokens such as <|im_end|>, <|eot_id|>, <|endoftext|>.
  bool is_end_of_generation(int32_t id) const { return vocab_.is_end_of_generation(id); }
  bool is_control(int32_t id) const;
  TokenType token_type(int32_t id) const;
  // The vocabulary's own text of `id` (byte-mapped for BPE, with U+2581 for SentencePiece).
  const std::string& token_text(int32_t id) const;
  std::optional<int32_t> find_token(std::string_view text) const { return vocab_.find(text); }

  VocabModel model() const { return vocab_.model(); }
  const std::string& model_name() const { return vocab_.data().model; }
  const std::string& pre_name() const { return vocab_.data().pre; }
  // True when decoding from the start drops one leading space (SentencePiece convention).
  bool strips_leading_space() const;

 private:
  enum class SpacePrefix { None, Add };
  Tokenizer();
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;
  void encode_spm(std::string_view text, SpacePrefix prefix, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::unique_ptr<SpecialSplitter> special_;
  std::unique_ptr<PreTokenizer> pre_;  // BPE only
  std::unique_ptr<BpeModel> bpe_;      // BPE only
  std::unique_ptr<SpmModel> spm_;      // SentencePiece only
};

}  // namespace chorus::tok
