// chorus-bench: benchmarks that print figures and check the tokens they time.
#include <cstdio>
#include <cstring>
#include <string>

#include "app/bench/bench_commands.h"

namespace {

void print_usage() {
  std::printf(
      "usage: chorus-bench <command> [options]\n"
      "\n"
      "commands:\n"
      "  run    --model M.gguf [--parallel 1,2,4,8,16,32] [--prompt-tokens 128]\n"
      "         [--gen-tokens 128] [--backend cpu|cuda|fake] [--threads N]\n"
      "         [--prefill-seqs N (most prompts per prefill call; 0: the backend's)]\n"
      "         engine throughput per batch size, then a batched-vs-solo check\n"
      "  cpu    CPU kernels and forward pass\n"
      "  synth  synthetic models\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? 1 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "run") return bench_run(argc, argv);
  if (cmd == "cpu") return bench_cpu(argc, argv);
  if (cmd == "synth") return bench_synth(argc, argv);
  std::fprintf(stderr, "chorus-bench: unknown command '%s' (try chorus-bench help)\n", cmd.c_str());
  return 1;
}
