#!/usr/bin/env bash
# Builds what scripts/gpu/run_gpu_checks.sh runs on the device machine (which has no Qt and no
# network) and puts it in .carry/ (git-ignored): the CUDA tests, the benchmarks, the backend
# library and the peer reference models it needs. The tree that travels must stay under 64 MiB,
# so the f32 peer models and the llama.cpp logits are left out and the binaries travel as
# .carry/binaries.tar.xz (run_gpu_checks.sh unpacks it).
#   scripts/gpu/build_carry.sh [MODEL.gguf...]   # extra models for chorus-bench run (.carry/models)
# CARRY_DIR (default .carry) names the output, so that two builds (an A/B of a kernel change)
# can travel in one call: CARRY=.carry-b bash scripts/gpu/run_gpu_checks.sh runs the second.
set -euo pipefail
cd "$(dirname "$0")/../.."
PEER=${CHORUS_PEER_DIR:-$(cd .. && pwd)/shared/peer}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHORUS_GUI=OFF -DCHORUS_CUDA=ON > /dev/null
tests=$(ls tests/cuda/test_*.cpp | xargs -n1 basename | sed 's/\.cpp$//')
bins="$tests chorus-cuda-bench chorus-cuda-synth chorus-cuda-icache-probe chorus-cuda-wgmma-probe chorus-cuda-imma-probe chorus-bench"
cmake --build build-gpu -j "${CHORUS_JOBS:-$(nproc)}" --target $bins chorus_cuda
C=${CARRY_DIR:-.carry}
rm -rf "$C" && mkdir -p "$C/bin" "$C/lib" "$C/peer/logits" "$C/models"
for t in $bins; do cp "build-gpu/bin/$t" "$C/bin/"; done
cp build-gpu/lib/libchorus_cuda.so "$C/lib/"
# A second build with the step-trace stamps in the kernels (cuda/trace_span.h): its benchmark and
# trace test travel as chorus-cuda-bench-traced and test_step_trace_traced (run_gpu_checks.sh
# runs the test with the others, and the benchmark in stage trace). CARRY_TRACE=0 skips it.
if [ "${CARRY_TRACE:-1}" = 1 ]; then
  cmake -S . -B build-gpu-trace -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHORUS_GUI=OFF -DCHORUS_CUDA=ON \
    -DCHORUS_CUDA_STEP_TRACE=ON > /dev/null
  cmake --build build-gpu-trace -j "${CHORUS_JOBS:-$(nproc)}" --target test_step_trace chorus-cuda-bench
  cp build-gpu-trace/bin/test_step_trace "$C/bin/test_step_trace_traced"
  cp build-gpu-trace/bin/chorus-cuda-bench "$C/bin/chorus-cuda-bench-traced"
fi
strip --strip-unneeded "$C"/bin/* "$C"/lib/*.so
# CARRY_PEER=0 leaves the peer models out (a second build beside a first one that has them).
for f in "$PEER"/logits/*.gguf; do
  [ "${CARRY_PEER:-1}" = 1 ] || break
  n=$(basename "${f%.gguf}")
  case $n in *f32) continue ;; esac
  cp "$f" "$PEER/logits/$n.json" "$PEER/logits/$n.exact.logits.f32" "$C/peer/logits/"
done
for m in "$@"; do cp "$m" "$C/models/"; done
# The binaries carry every kernel each: xz -9's 64 MiB window finds those copies across files
# (the default 8 MiB window is smaller than one binary): 9 MB instead of 34 for 13 binaries.
XZ_OPT=-9 tar -C "$C" -cJf "$C/binaries.tar.xz" bin lib && rm -rf "$C/bin" "$C/lib"
du -sh "$C"
