#!/usr/bin/env bash
# Static facts of the CUDA kernels, from this machine (no GPU needed): what ptxas gives each
# kernel (registers, spills, static shared memory), and with SASS=REGEX the instruction mix of
# the loops of the kernels whose names match. Run it before spending device time on a kernel
# change: a change that adds registers past an occupancy step, spills, or instructions in the
# tile loop shows here first (perf-notes quotes these figures).
#   scripts/gpu/kernel_report.sh [cuda/X.cu ...]            # default: every cuda/*.cu
#   SASS='gemv_kernel<.*12, 1>' scripts/gpu/kernel_report.sh cuda/gemv_q4.cu
#   DEFINES='-DFOO=1' ...                                   # extra nvcc flags (an experiment)
# The SASS part needs cuobjdump and nvdisasm, which the CUDA toolkit here lacks; they come from
# NVIDIA's PyPI wheels (pinned below) into .tools/ (git-ignored) on first use.
set -euo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(cuda/*.cu)

tools=.tools/cuda-bin
fetch_tools() {
  [ -x "$tools/cuobjdump" ] && [ -x "$tools/nvdisasm" ] && return
  mkdir -p .tools/whl "$tools"
  local pkg sha whl
  while read -r pkg sha; do
    python3 -m pip download --quiet --no-deps --dest .tools/whl "$pkg"
    whl=$(ls .tools/whl/"$(echo "${pkg%%==*}" | tr - _)"-*.whl)
    echo "$sha  $whl" | sha256sum -c --quiet -
    python3 -m zipfile -e "$whl" .tools/unpacked
  done <<'EOF'
nvidia-cuda-cuobjdump==13.5.37 38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58
nvidia-cuda-nvdisasm==13.5.37 d3fdbdd49fa53e2e4aacd3db8259d052bd2b049ececdcb69e92e083c6728e7ca
EOF
  cp .tools/unpacked/nvidia/cu13/bin/cuobjdump .tools/unpacked/nvidia/cu13/bin/nvdisasm "$tools/"
  chmod +x "$tools"/*
}

for f in "${files[@]}"; do
  base=$(basename "${f%.cu}")
  # The build's flags for device code (cuda/CMakeLists.txt), machine code only.
  # shellcheck disable=SC2086
  "$NVCC" -I. -O3 -DNDEBUG -std=c++20 -arch=sm_90 -cubin ${DEFINES:-} -Xptxas -v "$f" -o "$OUT/$base.cubin" \
    2> "$OUT/$base.ptxas"
done
python3 scripts/gpu/kernel_report.py ptxas "$OUT"/*.ptxas
if [ -n "${SASS:-}" ]; then
  fetch_tools
  for f in "${files[@]}"; do
    base=$(basename "${f%.cu}")
    PATH=$PWD/$tools:$PATH cuobjdump -sass "$OUT/$base.cubin" > "$OUT/$base.sass"
    python3 scripts/gpu/kernel_report.py sass "$SASS" "$OUT/$base.sass"
  done
fi
echo "(cubins and listings in $OUT)"
