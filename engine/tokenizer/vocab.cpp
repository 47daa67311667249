#include "engine/tokenizer/vocab.h"

#include <cctype>

#include "engine/gguf/gguf_reader.h"

namespace chorus::tok {
namespace {

const char* kPrefix = "tokenizer.ggml.";

std::string key(const char* name) { return std::string(kPrefix) + name; }

int32_t read_id(const gguf::Reader& r, const char* name) {
  const uint64_t v = r.get_uint_or(key(name), UINT64_MAX);
  return v > INT32_MAX ? -1 : static_cast<int32_t>(v);
}

Result<std::optional<bool>> read_flag(const gguf::Reader& r, const char* name) {
  if (!r.find(key(name))) return std::optional<bool>{};
  auto b = r.get_bool(key(name));
  if (!b) return b.error();
  return std::optional<bool>{*b};
}

Status read_types(const gguf::Reader& r, VocabData& d) {
  if (!r.find(key("token_type"))) return Ok{};
  auto types = r.get_int_array(key("token_type"));
  if (!types) return types.error();
  d.types.reserve(types->size());
  for (int64_t t : *types) {
    d.types.push_back(t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::Undefined);
  }
  return Ok{};
}

Status read_arrays(const gguf::Reader& r, VocabData& d) {
  auto tokens = r.get_string_array(key("tokens"));
  if (!tokens) return tokens.error();
  d.tokens = std::move(*tokens);
  CHORUS_TRY(read_types(r, d));
  if (r.find(key("scores"))) {
    auto scores = r.get_float_array(key("scores"));
    if (!scores) return scores.error();
    d.scores = std::move(*scores);
  }
  if (r.find(key("merges"))) {
    auto merges = r.get_string_array(key("merges"));
    if (!merges) return merges.error();
    d.merges = std::move(*merges);
  }
  return Ok{};
}

// Tokens that end a reply when the model emits them, by the names vocabularies use.
bool is_end_token_text(std::string_view t) {
  static const char* const kNames[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
      "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
      // Split after \x9C, which would otherwise swallow the "e" after it; the parentheses tell
      // the compiler the concatenation is meant.
      ("<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"),  // <｜end▁of▁sentence｜>
  };
  for (const char* n : kNames) {
    if (t == n) return true;
  }
  return false;
}

}  // namespace

Result<VocabData> read_vocab_data(const gguf::Reader& r) {
  VocabData d;
  auto model = r.get_string(key("model"));
  if (!model) return model.error();
  d.model = *model;
  d.pre = r.get_string_or(key("pre"), "default");
  d.general_name = r.get_string_or("general.name", "");
  if (d.pre.empty()) d.pre = "default";
  CHORUS_TRY(read_arrays(r, d));
  d.bos_id = read_id(r, "bos_token_id");
  d.eos_id = read_id(r, "eos_token_id");
  d.unk_id = read_id(r, "unknown_token_id");
  d.pad_id = read_id(r, "padding_token_id");
  d.eot_id = read_id(r, "eot_token_id");
  d.eom_id = read_id(r, "eom_token_id");
  struct Flag { const char* name; std::optional<bool>* dst; };
  for (Flag f : {Flag{"add_bos_token", &d.add_bos}, Flag{"add_eos_token", &d.add_eos},
                 Flag{"add_space_prefix", &d.add_space_prefix}}) {
    auto v = read_flag(r, f.name);
    if (!v) return v.error();
    *f.dst = *v;
  }
  return d;
}

Result<Vocab> Vocab::build(VocabData data) {
  Vocab v;
  v.d_ = std::move(data);
  const VocabData& d = v.d_;
  if (d.model == "gpt2") {
    v.model_ = VocabModel::BytePairBpe;
  } else if (d.model == "llama") {
    v.model_ = VocabModel::SentencePiece;
  } else {
    return make_error("tokenizer model '" + d.model +
                      "' is not supported (supported: gpt2 = byte-level BPE, llama = SentencePiece)");
  }
  if (d.tokens.empty()) return make_error("tokenizer vocabulary is empty");
  if (d.tokens.size() > static_cast<size_t>(INT32_MAX)) return make_error("tokenizer vocabulary is too large");
  const size_t n = d.tokens.size();
  if (!d.types.empty() && d.types.size() != n) {
    return make_error("tokenizer.ggml.token_type has " + std::to_string(d.types.size()) +
                      " entries for " + std::to_string(n) + " tokens");
  }
  if (!d.scores.empty() && d.scores.size() != n) {
    return make_error("tokenizer.ggml.scores has " + std::to_string(d.scores.size()) +
                      " entries for " + std::to_string(n) + " tokens");
  }
  CHORUS_TRY(v.validate_ids());
  v.types_ = d.types.empty() ? std::vector<TokenType>(n, TokenType::Normal) : d.types;
  v.text_to_id_.reserve(n);
  for (size_t i = 0; i < n; ++i) v.text_to_id_.emplace(d.tokens[i], static_cast<int32_t>(i));
  const bool spm = v.model_ == VocabModel::SentencePiece;
  v.add_bos_ = d.add_bos.value_or(spm);
  v.add_eos_ = d.add_eos.value_or(false);
  v.add_space_prefix_ = d.add_space_prefix.value_or(spm);
  v.index_end_of_generation();
  v.apply_model_quirks();
  return v;
}

Status Vocab::validate_ids() const {
  struct Id { const char* name; int32_t id; };
  for (Id i : {Id{"bos_token_id", d_.bos_id}, Id{"eos_token_id", d_.eos_id},
               Id{"unknown_token_id", d_.unk_id}, Id{"padding_token_id", d_.pad_id},
               Id{"eot_token_id", d_.eot_id}, Id{"eom_token_id", d_.eom_id}}) {
    if (i.id >= n_tokens()) {
      return make_error(std::string("tokenizer.ggml.") + i.name + " = " + std::to_string(i.id) +
                        " is outside the vocabulary of " + std::to_string(n_tokens()) + " tokens");
    }
  }
  return Ok{};
}

void Vocab::index_end_of_generation() {
  eog_.assign(d_.tokens.size(), false);
  for (int32_t id : {d_.eos_id, d_.eot_id, d_.eom_id}) {
    if (valid_id(id)) eog_[static_cast<size_t>(id)] = true;
  }
  for (size_t i = 0; i < d_.tokens.size(); ++i) {
    const TokenType t = types_[i];
    if ((t == TokenType::Control || t == TokenType::UserDefined) && is_end_token_text(d_.tokens[i])) {
      eog_[i] = true;
    }
  }
}

void Vocab::apply_model_quirks() {
  rstrip_.assign(d_.tokens.size(), false);
  std::string name = d_.general_name;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  // Phi-3's tokenizer declares rstrip on its added tokens except <unk>, <s>, <|endoftext|>.
  for (size_t i = 0; i < d_.tokens.size(); ++i) {
    const TokenType t = types_[i];
    const std::string& text = d_.tokens[i];
    const bool special = t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
    rstrip_[i] = special && text != "<unk>" && text != "<s>" && text != "<|endoftext|>";
  }
}

std::optional<int32_t> Vocab::find(std::string_view text) const {
  auto it = text_to_id_.find(text);
  if (it == text_to_id_.end()) return std::nullopt;
  return it->second;
}

bool Vocab::is_reserved(int32_t id) const {
  if (!valid_id(id)) return false;
  return id == d_.bos_id || id == d_.eos_id || id == d_.eot_id || id == d_.eom_id ||
         id == d_.pad_id || eog_[static_cast<size_t>(id)];
}

}  // namespace chorus::tok
