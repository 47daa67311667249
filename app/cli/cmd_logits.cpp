#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace chorus::cli {
int cmd_logits(int, char**) { return fail("logits: not built yet"); }
}  // namespace chorus::cli
