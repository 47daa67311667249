// libFuzzer target: arbitrary bytes (invalid UTF-8 included) through encode with and without
// special-token parsing, decode, and the streaming detokenizer, on the starcoder (byte-level
// BPE) and llama-spm (SentencePiece) vocabularies of the peer data.
//
// Vocabulary location: -chorus_peer=DIR on the command line, else $CHORUS_PEER_DIR, else
// ../shared/peer beside the repository. Run e.g.
//   build-fuzz/bin/fuzz_tokenizer -max_total_time=60 -chorus_peer=/work/shared/peer
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "engine/gguf/gguf_reader.h"
#include "engine/tokenizer/streaming_detokenizer.h"
#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace {

std::string g_peer_dir;

std::unique_ptr<chorus::tok::Tokenizer> load(const char* name) {
  const std::string path = g_peer_dir + "/vocab/ggml-vocab-" + name + ".gguf";
  auto reader = chorus::gguf::Reader::open(path);
  if (!reader) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", reader.message().c_str());
    std::abort();  // a harness set-up error, not a finding
  }
  auto tok = chorus::tok::Tokenizer::from_gguf(*reader);
  if (!tok) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", tok.message().c_str());
    std::abort();
  }
  return std::move(*tok);
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: invariant broken: %s\n", what);
    __builtin_trap();
  }
}

void exercise(const chorus::tok::Tokenizer& tok, std::string_view text, chorus::tok::SpecialParsing mode) {
  using namespace chorus::tok;
  const auto ids = tok.encode(text, mode);
  for (int32_t id : ids) check(id >= 0 && id < tok.n_vocab(), "id inside the vocabulary");
  const std::string decoded = tok.decode(ids);
  const bool valid = utf8_valid_prefix(text) == text.size();
  // A byte the vocabulary has no token for is encoded as U+FFFD (as llama.cpp does), so the
  // exact round trip only holds for text whose every byte has a byte-level token.
  bool substituted = false;
  for (unsigned char b : text) {
    if (!tok.find_token(byte_to_unicode(b))) substituted = true;
  }
  if (valid && !substituted && mode == SpecialParsing::Off && tok.model() == VocabModel::BytePairBpe) {
    check(decoded == text, "byte-level BPE round-trips valid UTF-8");
  }
  StreamingDetokenizer stream(tok);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string delta = stream.push(id);
    check(utf8_valid_prefix(delta) == delta.size(), "streamed text is valid UTF-8");
    streamed += delta;
  }
  streamed += stream.flush();
  check(streamed == utf8_sanitize(decoded), "streamed text equals the sanitized decoding");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* flag = "-chorus_peer=";
  for (int i = 1; i < *argc; ++i) {
    if (std::strncmp((*argv)[i], flag, std::strlen(flag)) == 0) g_peer_dir = (*argv)[i] + std::strlen(flag);
  }
  if (g_peer_dir.empty()) {
    const char* env = std::getenv("CHORUS_PEER_DIR");
    // This file is <repo>/tests/fuzz/fuzz_tokenizer.cpp; the peer data is <repo>/../shared/peer.
    const auto repo = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
    g_peer_dir = env ? std::string(env) : (repo.parent_path() / "shared" / "peer").string();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto bpe = load("starcoder");
  static const auto spm = load("llama-spm");
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto mode = (selector & 1) ? chorus::tok::SpecialParsing::On : chorus::tok::SpecialParsing::Off;
  exercise((selector & 2) ? *spm : *bpe, text, mode);
  return 0;
}
