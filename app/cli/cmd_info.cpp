#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace chorus::cli {
int cmd_info(int, char**) { return fail("info: not built yet"); }
}  // namespace chorus::cli
