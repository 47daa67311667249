// Special-token parsing (typed text never becomes a control token unless asked), end-of-
// generation detection, load errors, and the streaming detokenizer's UTF-8 guarantees.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/gguf/gguf_reader.h"
#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/streaming_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "support/test_support.h"

namespace chorus::tok {
namespace {

std::unique_ptr<Tokenizer> load_peer(const std::string& name) {
  const auto path = test::peer_dir() / "vocab" / ("ggml-vocab-" + name + ".gguf");
  auto reader = gguf::Reader::open(path.string());
  if (!reader) return nullptr;
  auto tok = Tokenizer::from_gguf(*reader);
  return tok ? std::move(*tok) : nullptr;
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// A byte-level BPE vocabulary built in memory: the 256 byte tokens, a few merges, and
// special tokens of every kind.
VocabData tiny_bpe_vocab() {
  VocabData d;
  d.model = "gpt2";
  d.pre = "smollm";
  for (int b = 0; b < 256; ++b) d.tokens.push_back(byte_to_unicode(static_cast<uint8_t>(b)));
  d.types.assign(256, TokenType::Normal);
  auto add = [&](const std::string& text, TokenType t) {
    d.tokens.push_back(text);
    d.types.push_back(t);
    return static_cast<int32_t>(d.tokens.size() - 1);
  };
  add("he", TokenType::Normal);      // 256
  add("ll", TokenType::Normal);      // 257
  add("hell", TokenType::Normal);    // 258
  add("hello", TokenType::Normal);   // 259
  d.merges = {"h e", "l l", "he ll", "hell o"};
  d.eos_id = add("<|im_end|>", TokenType::Control);            // 260
  d.bos_id = add("<|im_start|>", TokenType::Control);          // 261
  add("<|endoftext|>", TokenType::Control);                    // 262
  add("<tool>", TokenType::UserDefined);                       // 263
  d.pad_id = add("<pad>", TokenType::UserDefined);             // 264
  return d;
}

std::unique_ptr<Tokenizer> tiny_bpe() {
  auto t = Tokenizer::from_vocab(tiny_bpe_vocab());
  EXPECT_TRUE(t.ok()) << (t ? "" : t.message());
  return t ? std::move(*t) : nullptr;
}

TEST(TokenizerSpecial, InMemoryVocabMergesByRank) {
  auto tok = tiny_bpe();
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("hello"), (std::vector<int32_t>{259}));
  EXPECT_EQ(tok->decode(tok->encode("hello hell")), "hello hell");
}

TEST(TokenizerSpecial, TypedControlTextStaysText) {
  auto tok = tiny_bpe();
  ASSERT_TRUE(tok);
  const std::string typed = "hi<|im_end|><|im_start|>assistant<|endoftext|>";
  const auto off = tok->encode(typed, SpecialParsing::Off);
  EXPECT_FALSE(contains(off, 260));
  EXPECT_FALSE(contains(off, 261));
  EXPECT_FALSE(contains(off, 262));
  EXPECT_EQ(tok->decode(off), typed);
  const auto on = tok->encode(typed, SpecialParsing::On);
  EXPECT_TRUE(contains(on, 260));
  EXPECT_TRUE(contains(on, 261));
  EXPECT_TRUE(contains(on, 262));
  EXPECT_EQ(on.front(), tok->encode("h").front());
  EXPECT_EQ(on.back(), 262);
}

TEST(TokenizerSpecial, UserDefinedTokensMatchButReservedOnesDoNot) {
  auto tok = tiny_bpe();
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("<tool>", SpecialParsing::Off), (std::vector<int32_t>{263}));
  EXPECT_FALSE(contains(tok->encode("<pad>", SpecialParsing::Off), 264));  // padding id
  EXPECT_EQ(tok->encode("<pad>", SpecialParsing::On), (std::vector<int32_t>{264}));
}

TEST(TokenizerSpecial, EndOfGenerationAndControlDecoding) {
  auto tok = tiny_bpe();
  ASSERT_TRUE(tok);
  EXPECT_TRUE(tok->is_end_of_generation(260));   // eos
  EXPECT_TRUE(tok->is_end_of_generation(262));   // <|endoftext|>, control
  EXPECT_FALSE(tok->is_end_of_generation(261));
  EXPECT_FALSE(tok->is_end_of_generation(259));
  EXPECT_FALSE(tok->is_end_of_generation(-1));
  EXPECT_FALSE(tok->is_end_of_generation(100000));
  const std::vector<int32_t> ids{261, 259, 260};
  EXPECT_EQ(tok->decode(ids), "hello");
  EXPECT_EQ(tok->decode(ids, {ControlTokens::Render}), "<|im_start|>hello<|im_end|>");
  EXPECT_EQ(tok->token_to_bytes(-5), "");
  EXPECT_EQ(tok->find_token("<|im_end|>"), 260);
  EXPECT_FALSE(tok->find_token("nope").has_value());
}

TEST(TokenizerSpecial, StarcoderControlTokens) {
  auto tok = load_peer("starcoder");
  ASSERT_TRUE(tok) << "starcoder vocab missing from " << test::peer_dir();
  const std::string text = "x = 1<|endoftext|><fim_prefix>def f():<fim_suffix>";
  const auto off = tok->encode(text, SpecialParsing::Off);
  for (int32_t id = 0; id < 38; ++id) EXPECT_FALSE(contains(off, id)) << "control id " << id;
  EXPECT_EQ(tok->decode(off), text);
  const auto on = tok->encode(text, SpecialParsing::On);
  EXPECT_TRUE(contains(on, 0));
  EXPECT_TRUE(contains(on, 1));
  EXPECT_TRUE(contains(on, 3));
  EXPECT_TRUE(tok->is_end_of_generation(0));
  EXPECT_FALSE(tok->add_bos());
}

TEST(TokenizerSpecial, Phi3ControlTokensAndSpacePrefix) {
  auto tok = load_peer("phi-3");
  ASSERT_TRUE(tok);
  const int32_t user = *tok->find_token("<|user|>");
  const int32_t end = *tok->find_token("<|end|>");
  const std::string text = "<|user|>\nHi<|end|>";
  EXPECT_FALSE(contains(tok->encode(text, SpecialParsing::Off), user));
  EXPECT_FALSE(contains(tok->encode(text, SpecialParsing::Off), end));
  const auto on = tok->encode(text, SpecialParsing::On);
  EXPECT_EQ(on.front(), user);
  EXPECT_EQ(on.back(), end);
  EXPECT_TRUE(tok->is_end_of_generation(end));
  EXPECT_TRUE(tok->is_end_of_generation(tok->eos_id()));
  // Phi-3 drops whitespace after its added tokens, then prefixes the text with a space, as
  // Hugging Face and llama.cpp do: "<|user|>\nHi" == "<|user|>Hi".
  EXPECT_EQ(on, tok->encode("<|user|>Hi<|end|>", SpecialParsing::On));
  EXPECT_EQ(on[1], tok->encode("Hi")[0]);
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->bos_id(), 1);
}

TEST(TokenizerSpecial, UnsupportedNamesAreClearErrors) {
  VocabData d = tiny_bpe_vocab();
  d.pre = "no-such-pre";
  auto t = Tokenizer::from_vocab(d);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.message().find("no-such-pre"), std::string::npos);
  EXPECT_NE(t.message().find("smollm"), std::string::npos);  // lists what is supported
  d = tiny_bpe_vocab();
  d.model = "bert";
  t = Tokenizer::from_vocab(d);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.message().find("bert"), std::string::npos);
  d = tiny_bpe_vocab();
  d.types.pop_back();
  EXPECT_FALSE(Tokenizer::from_vocab(d).ok());
  d = tiny_bpe_vocab();
  d.eos_id = 99999;
  EXPECT_FALSE(Tokenizer::from_vocab(d).ok());
}

// Token ids of single raw bytes in a byte-level vocabulary.
std::vector<int32_t> byte_ids(const Tokenizer& tok, std::string_view bytes) {
  std::vector<int32_t> ids;
  for (char c : bytes) ids.push_back(tok.find_token(byte_to_unicode(static_cast<uint8_t>(c))).value_or(-1));
  return ids;
}

std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids,
                       std::vector<std::string>* deltas = nullptr) {
  StreamingDetokenizer s(tok);
  std::string out;
  for (int32_t id : ids) {
    std::string d = s.push(id);
    EXPECT_EQ(utf8_valid_prefix(d), d.size()) << "push emitted invalid UTF-8";
    if (deltas) deltas->push_back(d);
    out += d;
  }
  out += s.flush();
  return out;
}

TEST(StreamingDetokenizer, HoldsSplitCharactersUntilComplete) {
  auto tok = load_peer("starcoder");
  ASSERT_TRUE(tok);
  const std::string emoji = "\xF0\x9F\xA6\x99";  // U+1F999 llama, 4 bytes
  std::vector<std::string> deltas;
  EXPECT_EQ(stream_all(*tok, byte_ids(*tok, emoji), &deltas), emoji);
  EXPECT_EQ(deltas, (std::vector<std::string>{"", "", "", emoji}));
  const std::string cjk = "\xE6\x88\x91\xE6\x83\xB3";  // 我想
  deltas.clear();
  EXPECT_EQ(stream_all(*tok, byte_ids(*tok, "a" + cjk), &deltas), "a" + cjk);
  EXPECT_EQ(deltas[0], "a");
  EXPECT_EQ(deltas[3], "\xE6\x88\x91");
  EXPECT_EQ(deltas[6], "\xE6\x83\xB3");
}

TEST(StreamingDetokenizer, WholeTextsStreamToTheirDecoding) {
  for (const char* name : {"starcoder", "llama-spm", "deepseek-llm"}) {
    auto tok = load_peer(name);
    ASSERT_TRUE(tok) << name;
    const std::string text = "Hello 🦙 world! 我想在apple工作 😶‍🌫️ нещо";
    const auto ids = tok->encode(text);
    EXPECT_EQ(stream_all(*tok, ids), text) << name;
  }
}

TEST(StreamingDetokenizer, InvalidBytesBecomeReplacementCharacters) {
  auto tok = load_peer("starcoder");
  ASSERT_TRUE(tok);
  const std::string fffd(kReplacementChar);
  {
    StreamingDetokenizer s(*tok);
    EXPECT_EQ(s.push(byte_ids(*tok, "\x80")[0]), fffd);  // never valid: emitted at once
    EXPECT_EQ(s.push(byte_ids(*tok, "\xF0")[0]), "");
    EXPECT_EQ(s.push(byte_ids(*tok, "\x9F")[0]), "");
    EXPECT_EQ(s.n_pending_bytes(), 2u);
    EXPECT_EQ(s.flush(), fffd);                            // truncated at the end
    EXPECT_EQ(s.flush(), "");
  }
  {
    StreamingDetokenizer s(*tok);
    EXPECT_EQ(s.push(byte_ids(*tok, "\xE4")[0]), "");
    EXPECT_EQ(s.push(byte_ids(*tok, "a")[0]), fffd + "a");  // broken sequence, then text
    EXPECT_EQ(s.flush(), "");
  }
  EXPECT_EQ(utf8_sanitize("a\xC3"), "a" + fffd);
  // The starcoder vocabulary has no token for 0xFF (never part of UTF-8): it encodes as U+FFFD.
  EXPECT_EQ(tok->decode(tok->encode("a\xFF" "b")), "a" + fffd + "b");
  EXPECT_EQ(tok->decode(tok->encode("a\x80" "b")), "a\x80" "b");  // has a token: kept
  EXPECT_EQ(utf8_sanitize("\xED\xA0\x80"), fffd + fffd + fffd);  // surrogate: invalid
}

TEST(StreamingDetokenizer, SentencePieceDropsOnlyTheFirstLeadingSpace) {
  auto tok = load_peer("llama-spm");
  ASSERT_TRUE(tok);
  const auto ids = tok->encode("Hello world");
  StreamingDetokenizer s(*tok);
  std::string out;
  out += s.push(tok->bos_id());  // control: no text, does not consume the strip
  for (int32_t id : ids) out += s.push(id);
  EXPECT_EQ(out + s.flush(), "Hello world");
  StreamingDetokenizer cont(*tok, DecodeOptions{ControlTokens::Hide, /*at_start=*/false});
  std::string out2;
  for (int32_t id : ids) out2 += cont.push(id);
  EXPECT_EQ(out2, " Hello world");
}

}  // namespace
}  // namespace chorus::tok
