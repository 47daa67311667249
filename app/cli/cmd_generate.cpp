#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace chorus::cli {
int cmd_generate(int, char**) { return fail("generate: not built yet"); }
}  // namespace chorus::cli
