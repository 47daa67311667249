// Tokenizer vectors from llama.cpp (../shared/peer/vocab): every string of every vocabulary
// must encode to exactly the ids llama.cpp produced (no BOS/EOS, special tokens not parsed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_reader.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace chorus::tok {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> vocab_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(test::peer_dir() / "vocab", ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("ggml-vocab-", 0) == 0 && e.path().extension() == ".gguf") {
      names.push_back(f.substr(11, f.size() - 11 - 5));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The .inp convention: strings separated by "\n__ggml_vocab_test__\n", the last one
// followed by that separator too.
std::vector<std::string> split_inputs(const std::string& text) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    if (at == std::string::npos) break;
    out.push_back(text.substr(start, at - start));
    start = at + sep.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> parse_outputs(const std::string& text) {
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    long v = 0;
    while (ids >> v) row.push_back(static_cast<int32_t>(v));
    out.push_back(std::move(row));
  }
  return out;
}

std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += static_cast<char>(c);
  }
  return out;
}

class VocabVectors : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path base() const { return test::peer_dir() / "vocab" / ("ggml-vocab-" + GetParam() + ".gguf"); }

  std::unique_ptr<Tokenizer> load() const {
    auto reader = gguf::Reader::open(base().string());
    EXPECT_TRUE(reader.ok()) << (reader ? "" : reader.message());
    if (!reader) return nullptr;
    auto tok = Tokenizer::from_gguf(*reader);
    EXPECT_TRUE(tok.ok()) << (tok ? "" : tok.message());
    return tok ? std::move(*tok) : nullptr;
  }
};

TEST_P(VocabVectors, EncodesExactlyAsReference) {
  auto tok = load();
  ASSERT_TRUE(tok);
  const auto inputs = split_inputs(test::read_file(base().string() + ".inp"));
  const auto expected = parse_outputs(test::read_file(base().string() + ".out"));
  ASSERT_FALSE(inputs.empty());
  ASSERT_GE(expected.size(), inputs.size());
  int n_pass = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto got = tok->encode(inputs[i], SpecialParsing::Off);
    if (got == expected[i]) {
      ++n_pass;
      continue;
    }
    ADD_FAILURE() << GetParam() << " string " << i << " \"" << printable(inputs[i]) << "\"\n"
                  << "  expected: " << ids_string(expected[i]) << "\n"
                  << "  got:      " << ids_string(got);
  }
  std::printf("[ vocab    ] %s: %d/%zu strings match\n", GetParam().c_str(), n_pass, inputs.size());
}

// Byte-level BPE is lossless by construction; SentencePiece with byte fallback is too once
// the leading space it adds is dropped again.
TEST_P(VocabVectors, DecodeRoundTrips) {
  auto tok = load();
  ASSERT_TRUE(tok);
  for (const auto& s : split_inputs(test::read_file(base().string() + ".inp"))) {
    const auto ids = tok->encode(s);
    EXPECT_EQ(tok->decode(ids), s) << GetParam() << ": \"" << printable(s) << "\"";
  }
}

// The default model's vocabulary (SmolLM2, pre "smollm"), as scripts/fetch_model.sh installs
// it; ids are those of the Hugging Face tokenizer.
TEST(SmolLM2Vocab, MatchesHuggingFaceIds) {
  const std::string path = chorus::test::default_model_path().string();
  auto reader = gguf::Reader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.message();
  auto tok = Tokenizer::from_gguf(*reader);
  ASSERT_TRUE(tok.ok()) << tok.message();
  const auto& t = **tok;
  EXPECT_EQ(t.pre_name(), "smollm");
  EXPECT_EQ(t.encode("Hello, we can use"), (std::vector<int32_t>{19556, 28, 392, 416, 722}));
  EXPECT_EQ(t.encode("Hello world! 123"), (std::vector<int32_t>{19556, 905, 17, 216, 33, 34, 35}));
  EXPECT_EQ(t.encode("Caf\xC3\xA9 d\xC3\xA9j\xC3\xA0 vu."),
            (std::vector<int32_t>{51, 1939, 2756, 32564, 90, 16739, 386, 101, 30}));
  EXPECT_EQ(t.encode("  multiple   spaces"), (std::vector<int32_t>{216, 2701, 256, 5600}));
  EXPECT_EQ(t.encode("\n"), (std::vector<int32_t>{198}));
  const auto chat = t.encode("<|im_start|>user\nHi<|im_end|>\n", SpecialParsing::On);
  EXPECT_EQ(chat.front(), 1);
  EXPECT_TRUE(std::find(chat.begin(), chat.end(), 2) != chat.end());
  EXPECT_TRUE(t.is_end_of_generation(2));
  EXPECT_FALSE(t.add_bos());
}

TEST(VocabVectorsPresent, PeerDirectoryHasVocabularies) {
  EXPECT_GE(vocab_names().size(), 5u) << "no ggml-vocab-*.gguf in " << (test::peer_dir() / "vocab");
}

INSTANTIATE_TEST_SUITE_P(Peer, VocabVectors, ::testing::ValuesIn(vocab_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(VocabVectors);

}  // namespace
}  // namespace chorus::tok
