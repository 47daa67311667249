#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs every test suite:
#   release build (engine, CUDA backend when nvcc exists, GUI) + CTest,
#   ASan+UBSan and TSan builds of the engine + CTest (including the 2-minute stress test),
#   libFuzzer smoke runs (built with the ASan tests), and the packaging checks.
# Exits non-zero as soon as any stage fails. Pick stages with CHORUS_TEST_STAGES.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
STAGES=${CHORUS_TEST_STAGES:-"deps release asan tsan package"}
JOBS=${CHORUS_JOBS:-$(nproc)}
export CHORUS_PEER_DIR=${CHORUS_PEER_DIR:-$(cd "$ROOT/.." && pwd)/shared/peer}

stage() { echo; echo "=== $1 ($(date +%H:%M:%S)) ==="; }
has_stage() { [[ " $STAGES " == *" $1 "* ]]; }

# Short libFuzzer runs of every fuzz target in a build dir; any crash fails the stage.
fuzz_smoke() {
  for f in "$1"/bin/fuzz_*; do
    [ -x "$f" ] || continue
    echo "fuzzing $(basename "$f") for ${CHORUS_FUZZ_SECONDS:-30}s"
    corpus=$(mktemp -d)
    "$f" -seed=1 -max_total_time="${CHORUS_FUZZ_SECONDS:-30}" -rss_limit_mb=2048 -timeout=10 "$corpus" >"$corpus.log" 2>&1 ||
      { tail -n 40 "$corpus.log"; exit 1; }
    tail -n 2 "$corpus.log"
    rm -rf "$corpus" "$corpus.log"
  done
}

if has_stage deps; then
  stage "dependencies"
  scripts/install_deps.sh
  scripts/fetch_model.sh
fi

if has_stage release; then
  stage "release build + tests"
  cmake --preset default
  cmake --build build -j "$JOBS"
  ctest --test-dir build --output-on-failure -j "$JOBS" --timeout 900
fi

if has_stage asan; then
  stage "ASan+UBSan build + tests"
  cmake --preset asan-ubsan
  cmake --build build-asan -j "$JOBS"
  CHORUS_STRESS_SECONDS=${CHORUS_STRESS_SECONDS:-30} \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" --timeout 1200
  fuzz_smoke build-asan
fi

if has_stage tsan; then
  # Races live in the threaded parts: the engine thread, scheduler and thread pool. Only
  # their tests are built and run under TSan (the engine library itself is built whole).
  stage "TSan build + concurrency tests"
  cmake --preset tsan
  mapfile -t tsan_targets < <(ls tests/engine/test_sched_*.cpp | xargs -n1 basename | sed 's/\.cpp$//')
  cmake --build build-tsan -j "$JOBS" --target "${tsan_targets[@]}"
  CHORUS_STRESS_SECONDS=${CHORUS_STRESS_SECONDS:-30} TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir build-tsan --output-on-failure -j "$JOBS" --timeout 1200 -R '^(KvBlockAllocator|Sched|StopMatcher)' \
    --no-tests=error
fi

if has_stage package; then
  stage "packaging"
  # The .deb is made from the release build; the Windows installer from its own mingw build.
  bash packaging/ci/linux_package_check.sh "$ROOT/build"
  bash packaging/ci/windows_cross_check.sh "$ROOT/build-mingw"
fi

stage "all stages passed: $STAGES"
