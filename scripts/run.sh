#!/usr/bin/env bash
# Sets everything up (packages, default model, build) and starts Chorus.
#   scripts/run.sh                 the desktop app
#   scripts/run.sh --cli [PROMPT]  chorus-cli chat with the default model
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/fetch_model.sh
cmake --preset default >/dev/null
cmake --build build -j "$(nproc)"
if [ "${1:-}" = "--cli" ]; then
  shift
  if [ $# -gt 0 ]; then exec build/bin/chorus-cli chat --prompt "$*"; fi
  exec build/bin/chorus-cli chat
fi
exec build/bin/chorus "$@"
