#include "engine/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "engine/tokenizer/utf8.h"

namespace chorus::tok {

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// The GPT-2 expression; its trailing `\s+(?!\S)` leaves a lone whitespace before a word to
// the unmatched gap, which the piece-splitting convention keeps as a word of its own.
#define CHORUS_GPT2_RE R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))"
// Case-insensitive contractions spelt out, so that Unicode case folding (e.g. U+017F) cannot
// widen them.
#define CHORUS_CONTRACTIONS R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))"

const char* const kLlama3 = CHORUS_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 = CHORUS_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kSeedCoder = CHORUS_CONTRACTIONS
    R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" CHORUS_CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" CHORUS_CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Letters of the DeepSeek LLM tokenizer (cased scripts, spelt out by its authors).
const char* const kDeepseekLetters =
    "\\s?[A-Za-z\xC2\xB5\xC3\x80-\xC3\x96\xC3\x98-\xC3\xB6\xC3\xB8-\xC6\xBA\xC6\xBC-\xC6\xBF"
    "\xC7\x84-\xCA\x93\xCA\x95-\xCA\xAF\xCD\xB0-\xCD\xB3\xCD\xB6\xCD\xB7\xCD\xBB-\xCD\xBD"
    "\xCD\xBF\xCE\x86\xCE\x88-\xCE\x8A\xCE\x8C\xCE\x8E-\xCE\xA1\xCE\xA3-\xCF\xB5\xCF\xB7-\xD2\x81"
    "\xD2\x8A-\xD4\xAF\xD4\xB1-\xD5\x96\xE1\x82\xA0-\xE1\x83\x85\xE1\x8E\xA0-\xE1\x8F\xB5"
    "\xE1\x8F\xB8-\xE1\x8F\xBD\xE1\xB2\x90-\xE1\xB2\xBA\xE1\xB2\xBD-\xE1\xB2\xBF"
    "\xE1\xB4\x80-\xE1\xB4\xAB\xE1\xB5\xAB-\xE1\xB5\xB7\xE1\xB5\xB9-\xE1\xB6\x9A"
    "\xE1\xB8\x80-\xE1\xBC\x95\xE1\xBC\x98-\xE1\xBC\x9D\xE1\xBC\xA0-\xE1\xBD\x85"
    "\xE1\xBD\x88-\xE1\xBD\x8D\xE1\xBD\x90-\xE1\xBD\x97\xE1\xBD\x99\xE1\xBD\x9B\xE1\xBD\x9D"
    "\xE1\xBD\x9F-\xE1\xBD\xBD\xE1\xBE\x80-\xE1\xBE\xB4\xE1\xBE\xB6-\xE1\xBE\xBC\xE1\xBE\xBE"
    "\xE1\xBF\x82-\xE1\xBF\x84\xE1\xBF\x86-\xE1\xBF\x8C\xE1\xBF\x90-\xE1\xBF\x93"
    "\xE1\xBF\x96-\xE1\xBF\x9B\xE1\xBF\xA0-\xE1\xBF\xAC\xE1\xBF\xB2-\xE1\xBF\xB4"
    "\xE1\xBF\xB6-\xE1\xBF\xBC\xE2\x84\x82\xE2\x84\x87\xE2\x84\x8A-\xE2\x84\x93\xE2\x84\x95"
    "\xE2\x84\x99-\xE2\x84\x9D\xE2\x84\xA4\xE2\x84\xA6\xE2\x84\xA8\xE2\x84\xAA-\xE2\x84\xAD"
    "\xE2\x84\xAF-\xE2\x84\xB4\xE2\x84\xB9\xE2\x84\xBC-\xE2\x84\xBF\xE2\x85\x85-\xE2\x85\x89"
    "\xE2\x85\x8E\xE2\x86\x83\xE2\x86\x84\xE2\xB0\x80-\xE2\xB1\xBB\xE2\xB1\xBE-\xE2\xB3\xA4"
    "\xE2\xB3\xAB-\xE2\xB3\xAE\xE2\xB3\xB2\xE2\xB3\xB3\xEA\x99\x80-\xEA\x99\xAD"
    "\xEA\x9A\x80-\xEA\x9A\x9B\xEA\x9C\xA2-\xEA\x9D\xAF\xEA\x9D\xB1-\xEA\x9E\x87"
    "\xEA\x9E\x8B-\xEA\x9E\x8E\xEA\xAD\xB0-\xEA\xAE\xBF\xEF\xAC\x80-\xEF\xAC\x86"
    "\xEF\xAC\x93-\xEF\xAC\x97\xEF\xBC\xA1-\xEF\xBC\xBA\xEF\xBD\x81-\xEF\xBD\x9A"
    "\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}"
    "\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+";
// CJK unified ideographs U+4E00..U+9FA5, U+0800..U+4E00 and Hangul U+AC00..U+D7FF.
const char* const kDeepseekCjk = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

std::vector<PreTokenizerFamily> make_families() {
  return {
      {"default", {"default"},
       {R"([\p{P}\$\+<=>\^~\|]+)", CHORUS_GPT2_RE, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {"gpt2", {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "trillion", "jina-es", "jina-de",
                "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe",
                "exaone4", "gigachat", "a.x-4.0", "mellum", "modern-bert", "granite-docling"},
       {CHORUS_GPT2_RE}},
      {"starcoder", {"starcoder", "smollm", "refact", "command-r", "codeshell", "exaone",
                     "minerva-7b"},
       {R"(\p{N})", CHORUS_GPT2_RE}},
      {"llama3", {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                  "midm-2.0", "lfm2"},
       {kLlama3}, true},
      {"llama3-merges", {"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {kLlama3}},
      {"qwen2", {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan", "kormo",
                 "grok-2"},
       {kQwen2}},
      {"deepseek-llm", {"deepseek-llm"},
       {"[\r\n]", kDeepseekLetters, R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
        R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"}},
      {"deepseek-coder", {"deepseek-coder"},
       {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"}},
      {"deepseek-v3", {"deepseek-v3", "hunyuan-dense"},
       {R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}},
      {"falcon", {"falcon"},
       {R"([\p{P}\$\+<=>\^~\|`]+)", CHORUS_GPT2_RE, "[0-9][0-9][0-9]"}},
      {"bloom", {"bloom", "poro-chat", "gpt3-finnish"},
       {R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)"}},
      {"viking", {"viking"},
       {R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)", R"(\p{N})"}},
      {"tekken", {"tekken"}, {kTekken}, true},
      {"gpt-4o", {"gpt-4o", "llama4", "minimax-m2"}, {kGpt4o}},
      {"seed-coder", {"seed-coder"}, {kSeedCoder}},
      {"bailingmoe", {"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}},
  };
}

}  // namespace

const std::vector<PreTokenizerFamily>& pre_tokenizer_families() {
  static const std::vector<PreTokenizerFamily> families = make_families();
  return families;
}

std::string supported_pre_tokenizer_names() {
  std::string out;
  for (const auto& f : pre_tokenizer_families()) {
    for (const char* n : f.names) {
      if (!out.empty()) out += ", ";
      out += n;
    }
  }
  return out;
}

PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Result<PreTokenizer> PreTokenizer::create(const std::string& pre_name) {
  const PreTokenizerFamily* found = nullptr;
  for (const auto& f : pre_tokenizer_families()) {
    for (const char* n : f.names) {
      if (pre_name == n) found = &f;
    }
  }
  if (!found) {
    return make_error("pre-tokenizer '" + pre_name + "' (tokenizer.ggml.pre) is not supported; "
                      "supported: " + supported_pre_tokenizer_names());
  }
  PreTokenizer p;
  p.family_ = found->family;
  p.ignore_merges_ = found->ignore_merges;
  for (const char* pattern : found->patterns) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    auto c = std::make_unique<Compiled>();
    c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                            PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_NO_UTF_CHECK,
                            &err, &err_offset, nullptr);
    if (!c->code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return make_error("pre-tokenizer '" + pre_name + "': expression does not compile at offset " +
                        std::to_string(err_offset) + ": " + reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
    p.regexes_.push_back(std::move(c));
  }
  return p;
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n_valid = utf8_valid_prefix(text.substr(pos));
    if (n_valid > 0) {
      split_valid(text.substr(pos, n_valid), words);
      pos += n_valid;
      continue;
    }
    const Utf8Seq bad = utf8_decode(text.substr(pos));
    const size_t n_bad = bad.n_bytes == 0 ? 1 : bad.n_bytes;
    for (size_t i = 0; i < n_bad && pos < text.size(); ++i) words.push_back(text.substr(pos++, 1));
  }
}

namespace {

// Splits `piece` into matches of `code` and the gaps between them.
void split_piece(pcre2_code* code, pcre2_match_data* md, std::string_view piece,
                 std::vector<std::string_view>& out) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
  size_t start = 0;  // first byte not yet emitted
  size_t search = 0;
  while (search < piece.size()) {
    const int rc = pcre2_match(code, subject, piece.size(), search, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;  // no further match (or a matcher limit): the rest stays one piece
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t m_begin = ov[0], m_end = ov[1];
    if (m_end == m_begin) {  // empty match: step over one code point
      search = m_end + std::max<size_t>(1, utf8_decode(piece.substr(m_end)).n_bytes);
      continue;
    }
    if (m_begin > start) out.push_back(piece.substr(start, m_begin - start));
    out.push_back(piece.substr(m_begin, m_end - m_begin));
    start = search = m_end;
  }
  if (start < piece.size()) out.push_back(piece.substr(start));
}

}  // namespace

void PreTokenizer::split_valid(std::string_view text, std::vector<std::string_view>& words) const {
  std::vector<std::string_view> pieces{text};
  std::vector<std::string_view> next;
  for (const auto& re : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
    if (!md) return words.insert(words.end(), pieces.begin(), pieces.end()), void();
    next.clear();
    for (std::string_view p : pieces) split_piece(re->code, md, p, next);
    pcre2_match_data_free(md);
    pieces.swap(next);
  }
  words.insert(words.end(), pieces.begin(), pieces.end());
}

}  // namespace chorus::tok
