// chorus-cli generate: greedy continuation of a token list, printed as ids.
#include <cstdio>
#include <string>

#include "app/cli/args.h"
#include "app/cli/cli_backend.h"
#include "app/cli/commands.h"
#include "engine/backend/solo_run.h"

namespace chorus::cli {

int cmd_generate(int argc, char** argv) {
  std::set<std::string> valued = {"--model", "--tokens", "--n"};
  valued.insert(kBackendOptions.begin(), kBackendOptions.end());
  auto args = parse_args(argc, argv, 2, valued, {});
  if (!args) return fail("generate: " + args.message());
  auto model = args->get("--model"), tokens = args->get("--tokens");
  if (!model || !tokens) return fail("generate: usage: generate --model M.gguf --tokens 1,2,3 --n 32");
  auto ids = parse_token_list(*tokens);
  if (!ids) return fail("generate: " + ids.message());
  auto n = parse_int("--n", args->get("--n").value_or("32"), 0, 1 << 20);
  if (!n) return fail("generate: " + n.message());
  auto backend = open_backend(*model, *args, static_cast<int64_t>(ids->size()) + *n);
  if (!backend) return fail(backend.message());
  SoloRunOptions o;
  o.n_generate = static_cast<int32_t>(*n);
  auto r = solo_run(**backend, *ids, o);
  if (!r) return fail(*model + ": " + r.message());
  std::string line;
  for (size_t i = 0; i < r->generated.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(r->generated[i]);
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace chorus::cli
