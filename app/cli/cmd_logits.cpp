// chorus-cli logits: feed tokens from position 0 as one batch, write float32 logits.
#include <cstdio>
#include <fstream>

#include "app/cli/args.h"
#include "app/cli/cli_backend.h"
#include "app/cli/commands.h"
#include "engine/backend/solo_run.h"

namespace chorus::cli {

int cmd_logits(int argc, char** argv) {
  std::set<std::string> valued = {"--model", "--tokens", "--out"};
  valued.insert(kBackendOptions.begin(), kBackendOptions.end());
  auto args = parse_args(argc, argv, 2, valued, {});
  if (!args) return fail("logits: " + args.message());
  auto model = args->get("--model"), tokens = args->get("--tokens"), out_path = args->get("--out");
  if (!model || !tokens || !out_path) return fail("logits: usage: logits --model M.gguf --tokens 1,2,3 --out F");
  auto ids = parse_token_list(*tokens);
  if (!ids) return fail("logits: " + ids.message());
  auto backend = open_backend(*model, *args, static_cast<int64_t>(ids->size()));
  if (!backend) return fail(backend.message());
  SoloRunOptions o;
  o.prompt_logits = LogitsMode::Return;
  auto r = solo_run(**backend, *ids, o);
  if (!r) return fail(*model + ": " + r.message());
  std::ofstream out(*out_path, std::ios::binary | std::ios::trunc);
  if (!out) return fail("logits: cannot write " + *out_path);
  out.write(reinterpret_cast<const char*>(r->prompt_logits.data()),
            static_cast<std::streamsize>(r->prompt_logits.size() * sizeof(float)));
  if (!out) return fail("logits: write to " + *out_path + " failed");
  return 0;
}

}  // namespace chorus::cli
