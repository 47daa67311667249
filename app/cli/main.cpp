// chorus-cli: run models from the command line. See `chorus-cli help`.
#include <cstdio>
#include <cstring>
#include <string>

#include "app/cli/commands.h"

namespace {

void print_usage() {
  std::printf(
      "usage: chorus-cli <command> [options]\n"
      "\n"
      "commands:\n"
      "  info      --model M.gguf                       architecture, sizes, tensor types\n"
      "  logits    --model M.gguf --tokens 1,2,3 --out F  float32 logits [n_tokens][n_vocab]\n"
      "  generate  --model M.gguf --tokens 1,2,3 --n N    greedy continuation (ids)\n"
      "  chat      [--model M.gguf] [--prompt TEXT]        chat with the model's template\n"
      "  tokenize  --model V.gguf --file in.txt           token ids of the file's bytes\n"
      "  template  (--template F.jinja | --model M.gguf) --context ctx.json\n"
      "  version                                        print the version\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? 1 : 0;
  }
  std::string cmd = argv[1];
  using namespace chorus::cli;
  if (cmd == "info") return cmd_info(argc, argv);
  if (cmd == "logits") return cmd_logits(argc, argv);
  if (cmd == "generate") return cmd_generate(argc, argv);
  if (cmd == "chat") return cmd_chat(argc, argv);
  if (cmd == "tokenize") return cmd_tokenize(argc, argv);
  if (cmd == "template") return cmd_template(argc, argv);
  if (cmd == "version" || cmd == "--version") {
    std::printf("chorus-cli %s\n", CHORUS_VERSION);
    return 0;
  }
  std::fprintf(stderr, "chorus-cli: unknown command '%s' (try chorus-cli help)\n", cmd.c_str());
  return 1;
}
