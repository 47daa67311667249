// Full-model truth: for every tiny model in ../shared/peer/logits, chorus-cli's logits
// match the float64 `exact` reference (cosine >= 0.99999 per position, same argmax where the
// top-2 gap is >= 1e-3) and llama.cpp's (cosine >= 0.995), and greedy generation starts
// with the exact greedy continuation. Runs the real CLI, as users do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <filesystem>

#include "engine/chat/json.h"
#include "support/test_support.h"

namespace chorus {
namespace {

struct PeerCase {
  std::string json_name;
};

std::vector<std::string> peer_models() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(test::peer_dir() / "logits")) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<float> read_floats(const std::filesystem::path& p) {
  const std::string bytes = test::read_file(p);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

int64_t argmax(const float* a, int64_t n) { return std::max_element(a, a + n) - a; }

std::vector<int64_t> ints(const chat::Value& list) {
  std::vector<int64_t> out;
  for (const auto& v : list.items()) out.push_back(v.as_int());
  return out;
}

class ReferenceLogits : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceLogits, MatchesExactAndLlamaCpp) {
  const auto dir = test::peer_dir() / "logits";
  auto parsed = chat::parse_json(test::read_file(dir / (GetParam() + ".json")));
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  const chat::Value& doc = *parsed;
  const std::string model = (dir / doc.dict_data().find("model")->as_string()).string();
  const int64_t n_vocab = doc.dict_data().find("n_vocab")->as_int();
  const std::vector<int64_t> tokens = ints(*doc.dict_data().find("tokens"));
  const chat::DictData& exact = doc.dict_data().find("exact")->dict_data();
  const chat::DictData& llamacpp = doc.dict_data().find("llamacpp")->dict_data();

  std::string token_list;
  for (int64_t t : tokens) token_list += (token_list.empty() ? "" : ",") + std::to_string(t);
  const auto out_path = test::scratch_dir() / (GetParam() + ".logits");
  std::string out, err;
  ASSERT_EQ(test::run_command(test::cli_path() + " logits --model " + model + " --tokens " + token_list +
                                  " --out " + out_path.string(), &out, &err), 0) << err;
  const std::vector<float> ours = read_floats(out_path);
  const std::vector<float> ref = read_floats(dir / exact.find("logits_file")->as_string());
  const std::vector<float> lcpp = read_floats(dir / llamacpp.find("logits_file")->as_string());
  const int64_t n_tokens = static_cast<int64_t>(tokens.size());
  ASSERT_EQ(static_cast<int64_t>(ours.size()), n_tokens * n_vocab);
  ASSERT_EQ(ref.size(), ours.size());
  ASSERT_EQ(lcpp.size(), ours.size());

  const auto& gaps = exact.find("top2_gap")->items();
  double worst_exact = 1.0, worst_lcpp = 1.0;
  for (int64_t i = 0; i < n_tokens; ++i) {
    const float* o = ours.data() + i * n_vocab;
    const double c = cosine(o, ref.data() + i * n_vocab, n_vocab);
    const double cl = cosine(o, lcpp.data() + i * n_vocab, n_vocab);
    worst_exact = std::min(worst_exact, c);
    worst_lcpp = std::min(worst_lcpp, cl);
    EXPECT_GE(c, 0.99999) << "position " << i;
    EXPECT_GE(cl, 0.995) << "position " << i;
    if (gaps[static_cast<size_t>(i)].as_double() >= 1e-3) {
      EXPECT_EQ(argmax(o, n_vocab), argmax(ref.data() + i * n_vocab, n_vocab)) << "position " << i;
    }
  }
  std::printf("%s: min cosine vs exact %.7f, vs llama.cpp %.5f\n", GetParam().c_str(), worst_exact, worst_lcpp);

  const std::vector<int64_t> expected = ints(*exact.find("greedy_continuation"));
  ASSERT_EQ(test::run_command(test::cli_path() + " generate --model " + model + " --tokens " + token_list +
                                  " --n 32", &out, &err), 0) << err;
  std::vector<int64_t> generated;
  std::istringstream is(out);
  for (int64_t id; is >> id;) generated.push_back(id);
  ASSERT_EQ(generated.size(), 32u);
  ASSERT_LE(expected.size(), generated.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(generated[i], expected[i]) << "generated token " << i;
}

INSTANTIATE_TEST_SUITE_P(Peer, ReferenceLogits, ::testing::ValuesIn(peer_models()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(ReferenceLogits, AllPeerModelsAreCovered) { EXPECT_GE(peer_models().size(), 10u); }

}  // namespace
}  // namespace chorus
