// Robustness: random bytes (invalid UTF-8 included) never crash and finish fast, adversarial
// shapes (one huge word, long digit or space runs) stay near-linear, and concurrent encode()
// calls on one Tokenizer agree with serial ones.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/gguf/gguf_reader.h"
#include "engine/tokenizer/streaming_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "support/test_support.h"

namespace chorus::tok {
namespace {

using clock_type = std::chrono::steady_clock;

std::unique_ptr<Tokenizer> load_peer(const std::string& name) {
  const auto path = test::peer_dir() / "vocab" / ("ggml-vocab-" + name + ".gguf");
  auto reader = gguf::Reader::open(path.string());
  if (!reader) return nullptr;
  auto tok = Tokenizer::from_gguf(*reader);
  return tok ? std::move(*tok) : nullptr;
}

// Random strings mixing raw bytes, ASCII, multi-byte characters and special-token text.
std::string random_text(std::mt19937& rng) {
  static const char* const kPieces[] = {
      " ", "  ", "\n", "\t", "a", "Hello", "'s", "123", "\xC3\xA9", "\xE6\x88\x91",
      "\xF0\x9F\xA6\x99", "\xE2\x80\x8D", "<|endoftext|>", "<s>", "</s>", "<0x41>",
      "\xE2\x96\x81", "\xFF", "\xC3", "\xED\xA0\x80", "\xF0\x9F", "\x80"};
  std::uniform_int_distribution<int> len(0, 200), pick(0, 3), byte(0, 255),
      piece(0, static_cast<int>(std::size(kPieces)) - 1);
  std::string s;
  const int n = len(rng);
  for (int i = 0; i < n; ++i) {
    if (pick(rng) == 0) s += static_cast<char>(byte(rng));
    else s += kPieces[piece(rng)];
  }
  return s;
}

class Robust : public ::testing::TestWithParam<std::string> {};

TEST_P(Robust, RandomBytesEncodeDecodeAndStream) {
  auto tok = load_peer(GetParam());
  ASSERT_TRUE(tok) << GetParam();
  std::mt19937 rng(12345);
  double worst_ms = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string s = random_text(rng);
    const auto t0 = clock_type::now();
    const auto mode = (i & 1) ? SpecialParsing::On : SpecialParsing::Off;
    const auto ids = tok->encode(s, mode);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->n_vocab());
    const std::string decoded = tok->decode(ids);
    StreamingDetokenizer stream(*tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    ASSERT_EQ(utf8_valid_prefix(streamed), streamed.size());
    ASSERT_EQ(streamed, utf8_sanitize(decoded));
    if (tok->model() == VocabModel::BytePairBpe && mode == SpecialParsing::Off &&
        utf8_valid_prefix(s) == s.size()) {
      ASSERT_EQ(decoded, s);
    }
    worst_ms = std::max(worst_ms, std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
  }
  EXPECT_LT(worst_ms, 100.0) << "slowest random string took " << worst_ms << " ms";
}

TEST_P(Robust, AdversarialShapesStayFast) {
  auto tok = load_peer(GetParam());
  ASSERT_TRUE(tok);
  const std::vector<std::string> inputs = {
      std::string(200000, ' '), std::string(200000, 'a'), std::string(200000, '7'),
      std::string(100000, '\n') + std::string(100000, '\t'), std::string(100000, '\xFF'),
      [] { std::string s; for (int i = 0; i < 50000; ++i) s += "\xF0\x9F\xA6\x99"; return s; }(),
  };
  for (const auto& s : inputs) {
    const auto t0 = clock_type::now();
    const auto ids = tok->encode(s);
    const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    EXPECT_FALSE(ids.empty());
    EXPECT_LT(ms, 3000.0) << GetParam() << ": " << s.size() << " bytes took " << ms << " ms";
  }
}

TEST_P(Robust, ConcurrentEncodeMatchesSerial) {
  auto tok = load_peer(GetParam());
  ASSERT_TRUE(tok);
  std::mt19937 rng(7);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back(random_text(rng) + " the same words again and again");
  std::vector<std::vector<int32_t>> serial;
  {
    auto fresh = load_peer(GetParam());  // separate cache: the threads start cold
    for (const auto& t : texts) serial.push_back(fresh->encode(t));
  }
  std::vector<std::thread> threads;
  std::vector<int> n_mismatch(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        for (size_t i = 0; i < texts.size(); ++i) {
          const size_t k = (i * 7 + static_cast<size_t>(t) * 13) % texts.size();
          if (tok->encode(texts[k]) != serial[k]) ++n_mismatch[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(n_mismatch[t], 0) << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(Peer, Robust, ::testing::Values("starcoder", "gpt-2", "llama-spm", "deepseek-llm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace chorus::tok
