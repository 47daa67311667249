#include "engine/tokenizer/tokenizer.h"

#include "engine/gguf/gguf_reader.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/special_split.h"
#include "engine/tokenizer/spm.h"
#include "engine/tokenizer/utf8.h"

namespace chorus::tok {
namespace {

// SentencePiece pieces are encoded in slices of at most this many bytes (cut at a character
// boundary) so that symbol offsets stay 32-bit; real text never comes close.
constexpr size_t kMaxSpmSliceBytes = size_t{1} << 30;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xNN>" -> NN, or -1.
int parse_byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string spm_unescape(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  for (size_t pos = 0; pos < t.size();) {
    if (t.compare(pos, kSpmSpace.size(), kSpmSpace) == 0) {
      out += ' ';
      pos += kSpmSpace.size();
    } else {
      out += t[pos++];
    }
  }
  return out;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const gguf::Reader& reader) {
  auto data = read_vocab_data(reader);
  if (!data) return data.error();
  auto tok = from_vocab(std::move(*data));
  if (!tok) return make_error(reader.path() + ": " + tok.message());
  return tok;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(VocabData data) {
  auto vocab = Vocab::build(std::move(data));
  if (!vocab) return vocab.error();
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->vocab_ = std::move(*vocab);
  if (t->vocab_.model() == VocabModel::BytePairBpe) {
    auto pre = PreTokenizer::create(t->vocab_.data().pre);
    if (!pre) return pre.error();
    t->pre_ = std::make_unique<PreTokenizer>(std::move(*pre));
    const auto whole = t->pre_->ignore_merges() ? WholeWordLookup::On : WholeWordLookup::Off;
    auto bpe = BpeModel::build(t->vocab_, whole);
    if (!bpe) return bpe.error();
    t->bpe_ = std::make_unique<BpeModel>(std::move(*bpe));
  } else {
    auto spm = SpmModel::build(t->vocab_);
    if (!spm) return spm.error();
    t->spm_ = std::make_unique<SpmModel>(std::move(*spm));
  }
  t->special_ = std::make_unique<SpecialSplitter>(t->vocab_);
  return t;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, SpecialParsing special) const {
  std::vector<int32_t> out;
  encode_into(text, special, out);
  return out;
}

void Tokenizer::encode_into(std::string_view text, SpecialParsing special,
                            std::vector<int32_t>& out) const {
  out.reserve(out.size() + text.size() / 3);
  std::vector<Fragment> fragments;
  special_->split(text, special, fragments);
  // SentencePiece adds its space prefix at the start and after each special token.
  bool after_special = true;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    if (bpe_) {
      encode_bpe(f.text, out);
    } else {
      const bool prefix = after_special && vocab_.add_space_prefix();
      encode_spm(f.text, prefix ? SpacePrefix::Add : SpacePrefix::None, out);
    }
    after_special = false;
  }
}

void Tokenizer::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<std::string_view> words;
  pre_->split(text, words);
  for (std::string_view w : words) {
    // Vocabularies often lack tokens for bytes that never occur in UTF-8 (0xC0, 0xC1,
    // 0xF5..0xFF); such a stray byte is encoded as U+FFFD, as llama.cpp does.
    if (w.size() == 1 && bpe_->byte_token(static_cast<uint8_t>(w[0])) < 0) w = kReplacementChar;
    bpe_->encode_word(w, out);
  }
}

void Tokenizer::encode_spm(std::string_view text, SpacePrefix prefix, std::vector<int32_t>& out) const {
  std::string escaped = spm_escape_spaces(text);
  if (prefix == SpacePrefix::Add) escaped.insert(0, kSpmSpace);
  std::string_view rest = escaped;
  while (rest.size() > kMaxSpmSliceBytes) {
    size_t cut = kMaxSpmSliceBytes;
    while (cut > 0 && (static_cast<uint8_t>(rest[cut]) & 0xC0) == 0x80) --cut;
    spm_->encode(rest.substr(0, cut), out);
    rest.remove_prefix(cut);
  }
  spm_->encode(rest, out);
}

bool Tokenizer::is_control(int32_t id) const {
  return vocab_.valid_id(id) && vocab_.type(id) == TokenType::Control;
}

TokenType Tokenizer::token_type(int32_t id) const {
  return vocab_.valid_id(id) ? vocab_.type(id) : TokenType::Undefined;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  return vocab_.valid_id(id) ? vocab_.text(id) : kEmpty;
}

bool Tokenizer::strips_leading_space() const {
  return vocab_.model() == VocabModel::SentencePiece && vocab_.add_space_prefix();
}

std::string Tokenizer::token_to_bytes(int32_t id, ControlTokens control) const {
  if (!vocab_.valid_id(id)) return {};
  const std::string& text = vocab_.text(id);
  switch (vocab_.type(id)) {
    case TokenType::Control:
      return control == ControlTokens::Render ? text : std::string();
    case TokenType::Unknown:
      return control == ControlTokens::Render ? text : std::string(kReplacementChar);
    case TokenType::UserDefined:
      return text;  // added tokens are stored as plain text in both vocabulary kinds
    default:
      break;
  }
  if (vocab_.model() == VocabModel::BytePairBpe) {
    auto raw = unicode_to_bytes(text);
    return raw ? *raw : text;
  }
  if (vocab_.type(id) == TokenType::Byte) {
    const int b = parse_byte_token(text);
    if (b >= 0) return std::string(1, static_cast<char>(b));
  }
  return spm_unescape(text);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, DecodeOptions options) const {
  std::string out;
  bool strip = options.at_start && strips_leading_space();
  for (int32_t id : ids) {
    std::string piece = token_to_bytes(id, options.control);
    if (strip && !piece.empty()) {
      if (piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  return out;
}

}  // namespace chorus::tok
