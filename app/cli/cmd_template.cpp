#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace chorus::cli {
int cmd_template(int, char**) { return fail("template: not built yet"); }
}  // namespace chorus::cli
