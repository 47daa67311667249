// Bad input to chorus-cli: every case exits non-zero with one line on stderr that names the
// file (where there is one) and the problem. Never a crash (exit >= 128), never a hang.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/gguf/gguf_reader.h"
#include "engine/gguf/gguf_writer.h"
#include "support/test_support.h"

namespace chorus {
namespace {

struct CliOutcome {
  int status;
  std::string out, err;
};

CliOutcome run_cli(const std::string& args) {
  CliOutcome o;
  o.status = test::run_command("timeout 120 " + test::cli_path() + " " + args, &o.out, &o.err);
  return o;
}

void expect_clean_failure(const CliOutcome& o, const std::string& must_mention) {
  EXPECT_NE(o.status, 0);
  EXPECT_LT(o.status, 124) << "crashed or hung: " << o.err;
  ASSERT_FALSE(o.err.empty());
  EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "expected one line, got: " << o.err;
  EXPECT_NE(o.err.find(must_mention), std::string::npos) << o.err;
}

std::filesystem::path tiny_model() { return test::peer_dir() / "logits" / "tiny-llama-f32.gguf"; }

// A copy of the tiny model with one thing changed, written through the GGUF writer.
std::string rewritten_model(const std::string& name, const std::string& arch, bool q2k_embedding) {
  auto r = gguf::Reader::open(tiny_model().string());
  EXPECT_TRUE(r.ok());
  gguf::Writer w;
  for (const auto& key : r->metadata_keys()) w.set(key, *r->find(key));
  if (!arch.empty()) w.set("general.architecture", gguf::Value::make_string(arch));
  for (const auto& t : r->tensors()) {
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    if (q2k_embedding && t.name == "token_embd.weight") {
      const size_t q2k_bytes = static_cast<size_t>(t.n_elements() / 256 * 84);
      EXPECT_TRUE(w.add_tensor(t.name, TensorType::Q2_K, ne, std::vector<uint8_t>(q2k_bytes, 0)).ok());
      continue;
    }
    EXPECT_TRUE(w.add_tensor(t.name, t.type(), ne, std::vector<uint8_t>(t.data, t.data + t.size_bytes)).ok());
  }
  const auto path = (test::scratch_dir() / name).string();
  EXPECT_TRUE(w.write_file(path).ok());
  return path;
}

TEST(CliErrors, MissingFile) {
  expect_clean_failure(run_cli("info --model /nonexistent/model.gguf"), "/nonexistent/model.gguf");
  expect_clean_failure(run_cli("generate --model /nonexistent/model.gguf --tokens 1 --n 2"), "/nonexistent/model.gguf");
}

TEST(CliErrors, TruncatedFile) {
  const std::string bytes = test::read_file(tiny_model());
  const auto path = test::scratch_dir() / "truncated.gguf";
  test::write_file(path, bytes.substr(0, bytes.size() / 2));
  expect_clean_failure(run_cli("logits --model " + path.string() + " --tokens 1,2 --out /dev/null"), "truncated.gguf");
}

TEST(CliErrors, NotAGgufFile) {
  const auto path = test::scratch_dir() / "notes.gguf";
  test::write_file(path, "these are not the weights you are looking for\n");
  expect_clean_failure(run_cli("info --model " + path.string()), "not a GGUF file");
}

TEST(CliErrors, UnsupportedArchitecture) {
  const std::string path = rewritten_model("mamba.gguf", "mamba", false);
  expect_clean_failure(run_cli("generate --model " + path + " --tokens 1 --n 2"), "unsupported architecture 'mamba'");
}

TEST(CliErrors, UnsupportedTensorType) {
  const std::string path = rewritten_model("q2k.gguf", "", true);
  expect_clean_failure(run_cli("generate --model " + path + " --tokens 1 --n 2"), "Q2_K");
}

TEST(CliErrors, TokenOutOfRange) {
  expect_clean_failure(run_cli("generate --model " + tiny_model().string() + " --tokens 1,99999 --n 2"), "99999");
}

TEST(CliErrors, BadArguments) {
  expect_clean_failure(run_cli("generate --model " + tiny_model().string() + " --tokens 1,x --n 2"), "'x'");
  expect_clean_failure(run_cli("generate --model " + tiny_model().string() + " --tokens 1 --n -3"), "--n");
  expect_clean_failure(run_cli("logits --model " + tiny_model().string() + " --bogus 1"), "--bogus");
  expect_clean_failure(run_cli("logits --tokens 1"), "usage");
  expect_clean_failure(run_cli("frobnicate"), "frobnicate");
}

}  // namespace
}  // namespace chorus
