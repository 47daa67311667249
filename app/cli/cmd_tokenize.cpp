#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace chorus::cli {
int cmd_tokenize(int, char**) { return fail("tokenize: not built yet"); }
}  // namespace chorus::cli
