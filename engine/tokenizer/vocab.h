#pragma once
// A tokenizer vocabulary as GGUF stores it (`tokenizer.ggml.*`), and its validated,
// indexed form shared by the BPE and SentencePiece models.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/result.h"

namespace chorus::gguf {
class Reader;
}

namespace chorus::tok {

// `tokenizer.ggml.token_type` values.
enum class TokenType : uint8_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

// How encode() treats text that spells a special token.
//   Off: user text. Control and unknown-token text (`<|im_end|>`, `<s>`) is ordinary text.
//        User-defined tokens (added vocabulary that is not special) still match literally,
//        as in Hugging Face and llama.cpp, unless they are BOS/EOS/EOT/padding/end tokens.
//   On:  template output. Control, unknown and user-defined token text becomes its id.
enum class SpecialParsing { Off, On };

enum class VocabModel { BytePairBpe, SentencePiece };  // "gpt2", "llama"

// Everything a tokenizer is built from. Ids are -1 when absent.
struct VocabData {
  std::string model = "gpt2";        // tokenizer.ggml.model
  std::string pre = "default";       // tokenizer.ggml.pre
  std::vector<std::string> tokens;   // [n_vocab]; byte-mapped text for "gpt2"
  std::vector<TokenType> types;      // [n_vocab] or empty (= all Normal)
  std::vector<float> scores;         // [n_vocab] or empty (= all 0); SentencePiece merge scores
  std::vector<std::string> merges;   // BPE merges "left right", highest priority first
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1, eot_id = -1, eom_id = -1;
  std::optional<bool> add_bos, add_eos, add_space_prefix;  // nullopt: the model's default
  std::string general_name;          // general.name; selects per-model special-token quirks
};

// Reads the `tokenizer.ggml.*` keys. Errors name the file and the key.
Result<VocabData> read_vocab_data(const gguf::Reader& reader);

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TextToId = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// Validated vocabulary. Immutable after build(), so safe to share between threads.
class Vocab {
 public:
  static Result<Vocab> build(VocabData data);

  const VocabData& data() const { return d_; }
  VocabModel model() const { return model_; }
  int32_t n_tokens() const { return static_cast<int32_t>(d_.tokens.size()); }
  bool valid_id(int32_t id) const { return id >= 0 && id < n_tokens(); }
  const std::string& text(int32_t id) const { return d_.tokens[static_cast<size_t>(id)]; }
  TokenType type(int32_t id) const { return types_[static_cast<size_t>(id)]; }
  float score(int32_t id) const { return d_.scores.empty() ? 0.0f : d_.scores[static_cast<size_t>(id)]; }
  std::optional<int32_t> find(std::string_view text) const;

  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  bool is_end_of_generation(int32_t id) const { return valid_id(id) && eog_[static_cast<size_t>(id)]; }
  // BOS, EOS, EOT, EOM, padding or end-of-generation: never produced from user text.
  bool is_reserved(int32_t id) const;
  // Whitespace after this special token is dropped when it is matched in text (Phi-3's
  // added tokens are declared so upstream; GGUF does not carry the flag).
  bool strips_whitespace_after(int32_t id) const { return valid_id(id) && rstrip_[static_cast<size_t>(id)]; }

 private:
  VocabData d_;
  VocabModel model_ = VocabModel::BytePairBpe;
  std::vector<TokenType> types_;
  std::vector<bool> eog_;
  std::vector<bool> rstrip_;
  TextToId text_to_id_;  // first id wins for duplicate texts
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;

  Status validate_ids() const;
  void index_end_of_generation();
  void apply_model_quirks();
};

}  // namespace chorus::tok
