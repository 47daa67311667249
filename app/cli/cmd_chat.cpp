// chorus-cli chat: the model's chat template, streamed replies; interactive without --prompt.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "app/cli/args.h"
#include "app/cli/cli_backend.h"
#include "app/cli/commands.h"
#include "engine/backend/solo_run.h"
#include "engine/gguf/gguf_reader.h"
#include "engine/model/default_model.h"
#include "engine/prompt/chat_prompt.h"
#include "engine/tokenizer/streaming_detokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace chorus::cli {
namespace {


struct ChatSession {
  Backend& backend;
  const tok::Tokenizer& tokenizer;
  const ChatPrompt& prompt;
  SamplingParams sampling;
  int32_t max_tokens;
  std::vector<ChatMessage> messages;

  // Streams one assistant reply to stdout and appends it to the conversation.
  Status reply() {
    auto ids = prompt.encode(messages);
    if (!ids) return ids.error();
    const int64_t room = static_cast<int64_t>(backend.kv_layout().n_blocks) * backend.kv_layout().block_tokens;
    if (static_cast<int64_t>(ids->size()) + max_tokens > room) {
      return make_error("the conversation (" + std::to_string(ids->size()) + " tokens) no longer fits the context");
    }
    tok::StreamingDetokenizer detok(tokenizer, tok::DecodeOptions{tok::ControlTokens::Hide, false});
    std::string reply_text;
    SoloRunOptions o;
    o.n_generate = max_tokens;
    o.sampling = sampling;
    o.on_token = [&](int32_t id) {
      if (tokenizer.is_end_of_generation(id)) return false;
      std::string piece = detok.push(id);
      reply_text += piece;
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
    auto r = solo_run(backend, *ids, o);
    if (!r) return r.error();
    std::string rest = detok.flush();
    reply_text += rest;
    std::printf("%s\n", rest.c_str());
    messages.push_back({"assistant", reply_text});
    return Ok{};
  }
};

}  // namespace

int cmd_chat(int argc, char** argv) {
  std::set<std::string> valued = {"--model", "--prompt", "--system", "--max-tokens", "--temperature", "--seed"};
  valued.insert(kBackendOptions.begin(), kBackendOptions.end());
  auto args = parse_args(argc, argv, 2, valued, {});
  if (!args) return fail("chat: " + args.message());
  const std::string model = args->get("--model").value_or(default_model_path());
  auto max_tokens = parse_int("--max-tokens", args->get("--max-tokens").value_or("256"), 1, 1 << 16);
  if (!max_tokens) return fail("chat: " + max_tokens.message());
  SamplingParams sampling;
  if (auto t = args->get("--temperature")) {
    char* end = nullptr;
    sampling.temperature = std::strtof(t->c_str(), &end);
    if (*end != '\0' || sampling.temperature < 0) return fail("chat: --temperature must be a number >= 0");
  }
  if (auto s = args->get("--seed")) {
    auto v = parse_int("--seed", *s, 0, 2147483647);
    if (!v) return fail("chat: " + v.message());
    sampling.seed = static_cast<uint64_t>(*v);
  }

  auto reader = gguf::Reader::open(model);
  if (!reader) {
    if (!args->get("--model")) return fail(reader.message() + " (run scripts/fetch_model.sh to install the default model)");
    return fail(reader.message());
  }
  auto tokenizer = tok::Tokenizer::from_gguf(*reader);
  if (!tokenizer) return fail(tokenizer.message());
  auto prompt = ChatPrompt::from_gguf(*reader, **tokenizer);
  if (!prompt) return fail(prompt.message());
  auto backend = open_backend(model, *args, 0);
  if (!backend) return fail(backend.message());

  ChatSession session{**backend, **tokenizer, *prompt, sampling, static_cast<int32_t>(*max_tokens), {}};
  if (auto sys = args->get("--system")) session.messages.push_back({"system", *sys});
  if (auto p = args->get("--prompt")) {
    session.messages.push_back({"user", *p});
    auto st = session.reply();
    return st ? 0 : fail(st.message());
  }
  std::fprintf(stderr, "chatting with %s (empty line or Ctrl-D to quit)\n", model.c_str());
  std::string line;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line) || line.empty()) break;
    session.messages.push_back({"user", line});
    if (auto st = session.reply(); !st) return fail(st.message());
  }
  return 0;
}

}  // namespace chorus::cli
