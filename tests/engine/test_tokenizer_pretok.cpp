// Pre-tokenizer families: every supported `tokenizer.ggml.pre` name compiles, and the
// expressions split the way each family is documented to.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/tokenizer/pretokenizer.h"

namespace chorus::tok {
namespace {

std::vector<std::string> words_of(const std::string& pre, const std::string& text) {
  auto p = PreTokenizer::create(pre);
  EXPECT_TRUE(p.ok()) << (p ? "" : p.message());
  if (!p) return {};
  std::vector<std::string_view> views;
  p->split(text, views);
  std::string joined;
  for (auto v : views) joined += v;
  EXPECT_EQ(joined, text) << pre << ": words must cover the text exactly";
  return {views.begin(), views.end()};
}

using W = std::vector<std::string>;

TEST(PreTokenizer, EverySupportedNameCompiles) {
  size_t n_names = 0;
  for (const auto& family : pre_tokenizer_families()) {
    for (const char* name : family.names) {
      ++n_names;
      auto p = PreTokenizer::create(name);
      ASSERT_TRUE(p.ok()) << name << ": " << (p ? "" : p.message());
      std::vector<std::string_view> words;
      p->split("Hello, y'all! 1234567 \xE6\x88\x91\xE6\x83\xB3 \xF0\x9F\xA6\x99  \n\n x", words);
      EXPECT_FALSE(words.empty()) << name;
    }
  }
  EXPECT_GE(n_names, 40u);
}

TEST(PreTokenizer, UnknownNameListsSupported) {
  auto p = PreTokenizer::create("mystery");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.message().find("'mystery'"), std::string::npos);
  EXPECT_NE(p.message().find("llama-bpe"), std::string::npos);
  EXPECT_NE(p.message().find("qwen2"), std::string::npos);
}

TEST(PreTokenizer, FamiliesSplitDigitsTheirOwnWay) {
  EXPECT_EQ(words_of("gpt-2", "abc 12345"), (W{"abc", " 12345"}));
  EXPECT_EQ(words_of("smollm", "abc 123"), (W{"abc", " ", "1", "2", "3"}));
  EXPECT_EQ(words_of("llama-bpe", "abc 1234567"), (W{"abc", " ", "123", "456", "7"}));
  EXPECT_EQ(words_of("qwen2", "x12"), (W{"x", "1", "2"}));
  EXPECT_EQ(words_of("deepseek-coder", "ab12"), (W{"ab", "1", "2"}));
}

TEST(PreTokenizer, Llama3Contractions) {
  EXPECT_EQ(words_of("llama3", "I'VE it's"), (W{"I", "'VE", " it", "'s"}));
  EXPECT_EQ(words_of("llama3", "  \n\nx"), (W{"  \n\n", "x"}));
}

TEST(PreTokenizer, WhitespaceBeforeWordStaysWithTheWord) {
  EXPECT_EQ(words_of("starcoder", "a   b"), (W{"a", "  ", " b"}));
  EXPECT_EQ(words_of("gpt-2", "a\n b"), (W{"a", "\n", " b"}));
}

TEST(PreTokenizer, InvalidBytesAreWordsOfTheirOwn) {
  EXPECT_EQ(words_of("gpt-2", "ab\xFF" "cd"), (W{"ab", "\xFF", "cd"}));
  EXPECT_EQ(words_of("llama3", "\xE6\x88"), (W{"\xE6", "\x88"}));
}

}  // namespace
}  // namespace chorus::tok
