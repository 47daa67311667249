// chorus-cli tokenize --model V.gguf --file in.txt [--repeat N]
// Prints the token ids of the file's exact bytes on one line (no BOS/EOS, special tokens not
// parsed: the llama.cpp test-tokenizer-0 convention). --repeat N encodes the file N times
// more and prints the throughput to stderr (a benchmark, not a test).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "engine/gguf/gguf_reader.h"
#include "engine/tokenizer/tokenizer.h"

namespace chorus::cli {
namespace {

Result<std::string> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read " + path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error("error reading " + path);
  return s;
}

void print_ids(const std::vector<int32_t>& ids) {
  std::string line;
  line.reserve(ids.size() * 6 + 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
}

void bench(const tok::Tokenizer& tok, const std::string& text, long n_repeat) {
  using clock = std::chrono::steady_clock;
  size_t n_tokens = 0;
  const auto t0 = clock::now();
  for (long i = 0; i < n_repeat; ++i) n_tokens += tok.encode(text).size();
  const double t_s = std::chrono::duration<double>(clock::now() - t0).count();
  const double n_bytes = static_cast<double>(text.size()) * static_cast<double>(n_repeat);
  std::fprintf(stderr, "tokenize: %ld x %zu bytes in %.3f s: %.0f bytes/s (%.2f MB/s), %.0f tokens/s\n",
               n_repeat, text.size(), t_s, n_bytes / t_s, n_bytes / t_s / 1e6,
               static_cast<double>(n_tokens) / t_s);
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  auto args = parse_args(argc, argv, 2, {"--model", "--file", "--repeat"}, {});
  if (!args) return fail("tokenize: " + args.message());
  auto model = args->get("--model");
  auto file = args->get("--file");
  if (!model || !file || !args->positional.empty()) {
    return fail("tokenize: usage: tokenize --model V.gguf --file in.txt [--repeat N]");
  }
  long n_repeat = 0;
  if (auto r = args->get("--repeat")) {
    auto v = parse_int("--repeat", *r, 1, 1000000);
    if (!v) return fail("tokenize: " + v.message());
    n_repeat = *v;
  }
  auto reader = gguf::Reader::open(*model);
  if (!reader) return fail(reader.message());
  auto tok = tok::Tokenizer::from_gguf(*reader);
  if (!tok) return fail(tok.message());
  auto text = read_all(*file);
  if (!text) return fail("tokenize: " + text.message());
  const auto t0 = std::chrono::steady_clock::now();
  const auto ids = (*tok)->encode(*text, tok::SpecialParsing::Off);
  const double t_first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_ids(ids);
  if (n_repeat > 0) {
    // The first pass also fills the word cache; later passes mostly hit it.
    std::fprintf(stderr, "tokenize: first pass %zu bytes in %.3f s: %.2f MB/s (cold cache)\n",
                 text->size(), t_first_s, static_cast<double>(text->size()) / t_first_s / 1e6);
    bench(**tok, *text, n_repeat);
  }
  return 0;
}

}  // namespace chorus::cli
