#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace chorus::cli {
int cmd_chat(int, char**) { return fail("chat: not built yet"); }
}  // namespace chorus::cli
