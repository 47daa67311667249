#!/usr/bin/env bash
# GPU checks for the CUDA backend, run on the device machine from the repository root with
# binaries built elsewhere (nvcc sm_90, cudart static) carried in $CARRY:
#   $CARRY/bin/{test_*,chorus-cuda-bench,chorus-cuda-synth,chorus-bench}
#   $CARRY/lib/libchorus_cuda.so       $CARRY/peer/logits/*  (peer tiny models + references)
#   $CARRY/models/*.gguf (optional)    models to run through chorus-bench run as well
# Build them here with scripts/gpu/build_carry.sh. Runs the kernel and backend tests,
# generates the synthetic q4_k_m models there (too big to carry), benchmarks them, and prints
# a short table last. Full logs go to $OUT (few files: the device tool returns at most 8).
# Stages (STAGES, comma separated): tests, bench, trace (chorus-cuda-bench-traced --trace: where
# a graphed decode step's time goes, per launch kind; cuda/step_trace.h), profile, esynth (start
# the Engine's synthetic 8B model in the background), assemble (a model carried in parts),
# enginebench, probe (chorus-cuda-wgmma-probe: wgmma's bits and rate against mma.sync; chorus-cuda-imma-probe: the integer tile's). TRACE_NS: the N list of stage trace (default "1 8 32"); TRACE_ARGS more of its
# options (e.g. --trace-tuning=gemv_splits=0.4.0.0: one more traced run under that setting).
# TESTS (globs separated by spaces, default test_*) picks the test binaries; PROFILE_RUNS, DETAIL and SASS (below) pick launches;
# BENCH_ARGS go to chorus-cuda-bench after its N list (e.g. --attn-cluster-max-rows=0,8), and
# BENCH_ARGS_l1b / BENCH_ARGS_l8b to its run on that model only; BENCH_MODELS (default
# "l1b l8b") picks the models. ENGINE_TUNING (';'-separated, an empty item: the defaults) runs
# stage enginebench once under each CHORUS_CUDA_TUNING (cuda/cuda_tuning.h: candidate launch
# settings through the whole Engine without a rebuild); ENGINE_ARGS (';'-separated, an empty
# item: none) runs it once more under each set of extra chorus-bench run options (e.g.
# "--prefill-seqs 1"); ENGINE_PARALLEL its N list. ESYNTH_1B=1 makes esynth write the
# synthetic llama3.2-1b model too, for enginebench.
set -uo pipefail
CARRY=${CARRY:-.carry}
OUT=${OUT:-/tmp/chorus-gpu-out}
STAGES=${STAGES:-tests,bench,enginebench}
mkdir -p "$OUT"
[ -f "$CARRY/binaries.tar.xz" ] && tar -C "$CARRY" -xJf "$CARRY/binaries.tar.xz"
BIN=$CARRY/bin
export CHORUS_PEER_DIR=${CHORUS_PEER_DIR:-$PWD/$CARRY/peer}
export CHORUS_CUDA_LIB=$PWD/$CARRY/lib/libchorus_cuda.so
# libcublasLt.so.13: the toolkit's, else the one PyTorch's wheels carry.
LT=$(ls /usr/local/cuda/lib64/libcublasLt.so.13 2>/dev/null || find / -name 'libcublasLt.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "${LT:-/usr/local/cuda/lib64/x}"):$PWD/$CARRY/lib:${LD_LIBRARY_PATH:-}
LOG=$OUT/checks.log
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.mem,driver_version --format=csv | tee "$LOG"
declare -A R
has() { [[ ",$STAGES," == *",$1,"* ]]; }
section() { echo "==== $1 ====" >> "$LOG"; }

# Synthetic models in the background while the tests run (16 cores there).
# Written once per machine: a second run in the same call (CARRY=.carry-b) reuses them.
SYNTH_PID=
if (has bench || has trace || has profile) && [ ! -f /tmp/synth.done ]; then
  ( "$BIN/chorus-cuda-synth" llama3.2-1b /tmp/l1b.gguf > /tmp/synth1b.log 2>&1
    "$BIN/chorus-cuda-synth" llama3-8b /tmp/l8b.gguf > /tmp/synth8b.log 2>&1 && touch /tmp/synth.done ) &
  SYNTH_PID=$!
fi
# chorus-bench synth writes a tokenizer too, so its models run through the whole Engine. It runs
# in its own session so that it survives this command and a later call (stage enginebench,
# while the machine is still held) finds the file.
if has esynth; then
  : > /tmp/esynth8b.log  # now, not in the background job: enginebench below waits only if it exists
  e1b=true
  [ "${ESYNTH_1B:-0}" = 1 ] && e1b="'$BIN/chorus-bench' synth --shape llama3.2-1b --type q4_k_m --out /tmp/e1b.gguf"
  setsid nohup bash -c "$e1b && '$BIN/chorus-bench' synth --shape llama3-8b --type q4_k_m --out /tmp/e8b.gguf \
    > /tmp/esynth8b.log 2>&1 && touch /tmp/e8b.done" > /dev/null 2>&1 < /dev/null &
fi
# A model too big for one call travels in parts over several calls while the machine is held:
# .parts/pN/NAME.part (git-ignored, each carried by its own call; earlier parts copied to /tmp
# and back into .parts/ by the last call) and .parts/NAME.sha256 (carried with the last part);
# the parts are joined in pN order and checked before use.
if has assemble; then
  for sum in .parts/*.sha256; do
    name=$(basename "${sum%.sha256}")
    cat .parts/p*/"$name".part > "/tmp/$name"
    echo "$(cut -d' ' -f1 "$sum")  /tmp/$name" | sha256sum -c - | tee -a "$LOG"
  done
fi

if has tests; then
  read -ra patterns <<< "${TESTS:-test_*}"  # split on spaces without globbing against the working directory
  for pattern in "${patterns[@]}"; do
    for t in "$BIN"/$pattern; do
      n=$(basename "$t")
      section "$n"
      timeout 300 "$t" >> "$LOG" 2>&1; R[$n]=$?
    done
  done
  grep -E "^\[  FAILED|Failure|Expected|Which is|error:" "$LOG" | head -30
fi

# wgmma against mma.sync (tests/cuda/wgmma_probe.cu): the same bits, and each one's tile rate.
if has probe && [ -x "$BIN/chorus-cuda-wgmma-probe" ]; then
  section "chorus-cuda-wgmma-probe"
  timeout 120 "$BIN/chorus-cuda-wgmma-probe" 2>&1 | tee "$OUT/probe.txt" >> "$LOG"; R[chorus-cuda-wgmma-probe]=${PIPESTATUS[0]}
fi
# The integer Q4_K tile (tests/cuda/imma_probe.cu): its bits against the CPU, its rate against today's.
if has probe && [ -x "$BIN/chorus-cuda-imma-probe" ]; then
  section "chorus-cuda-imma-probe"
  timeout 120 "$BIN/chorus-cuda-imma-probe" 2>&1 | tee -a "$OUT/probe.txt" >> "$LOG"; R[chorus-cuda-imma-probe]=${PIPESTATUS[0]}
fi

if has bench || has trace || has profile; then
  python3 - <<'PY' 2>&1 | tee -a "$LOG"
import torch
x = torch.empty(2 * 1024**3, dtype=torch.uint8, device='cuda'); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
s.record()
for _ in range(10): y.copy_(x)
e.record(); torch.cuda.synchronize()
print(f"device copy: {2 * x.numel() * 10 / (s.elapsed_time(e) * 1e-3) / 1e12:.2f} TB/s (read+write)")
PY
  [ -n "$SYNTH_PID" ] && wait "$SYNTH_PID"
  cat /tmp/synth1b.log /tmp/synth8b.log | tail -n 2
fi

if has bench; then
  for m in ${BENCH_MODELS:-l1b l8b}; do
    section "chorus-cuda-bench $m"
    model_args=BENCH_ARGS_$m  # BENCH_ARGS_l1b / BENCH_ARGS_l8b: that model's only
    timeout 300 "$BIN/chorus-cuda-bench" /tmp/$m.gguf 1 8 32 ${BENCH_ARGS:-} ${!model_args:-} 2>&1 | tee "$OUT/bench_$m.txt" >> "$LOG"
  done
fi

if has trace; then
  for m in ${BENCH_MODELS:-l1b l8b}; do
    section "chorus-cuda-bench-traced $m"
    # shellcheck disable=SC2086
    timeout 300 "$BIN/chorus-cuda-bench-traced" /tmp/$m.gguf ${TRACE_NS:-1 8 32} --trace --trace-only ${TRACE_ARGS:-} 2>&1 | tee "$OUT/trace_$m.txt" >> "$LOG"
  done
fi

# Where a step's time goes: ncu times every kernel of one eager decode step (M = 1 and 32)
# and of one 512-token prefill on the 8B model (PROFILE_MODEL=l1b: the 1B one, here and in the
# DETAIL and SASS launches below); summed per kernel name.
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if has profile; then
  IFS=';' read -ra runs <<< "${PROFILE_RUNS:-decode 1;decode 32;prefill 1}"
  for what in "${runs[@]}"; do
    set -- $what
    timeout 200 "$NCU" --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \
      "$BIN/chorus-cuda-bench" --profile $1 "/tmp/${PROFILE_MODEL:-l8b}.gguf" $2 > /tmp/ncu.csv 2> /tmp/ncu.err
    echo "-- ncu ${PROFILE_MODEL:-l8b} $1 M=$2 (rc $?)" | tee -a "$OUT/profile.txt"
    python3 - /tmp/ncu.csv <<'PY' | tee -a "$OUT/profile.txt"
import csv, sys, collections, re
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows: print("no ncu rows"); sys.exit()
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); ui = h.index("Metric Unit")
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows[1:]:
    us = float(r[vi].replace(",", "")) * scale.get(r[ui], float("nan"))
    name = re.sub(r"\(.*", "", r[ki]).replace("chorus::cuda::", "").replace("chorus::", "")[:60]
    tot[name] += us; cnt[name] += 1
print(f"kernels {sum(cnt.values())}, sum of kernel times {sum(tot.values()):.0f} us")
for n, us in sorted(tot.items(), key=lambda x: -x[1])[:12]:
    print(f"{us:9.1f} us {cnt[n]:5d}x {us / cnt[n]:7.1f} us/launch  {n}")
PY
  done
  # Throughput, occupancy and stall reasons of chosen launches of one decode step:
  # DETAIL="M KERNEL_REGEX SKIP COUNT;..." (default: a few GEMVs of layer 0 at M = 1 and 32).
  IFS=";" read -ra details <<< "${DETAIL-1 gemv_kernel 0 5;32 gemv_kernel 0 5}"  # DETAIL= : none
  stalls=$(for r in long_scoreboard short_scoreboard barrier mio_throttle math_pipe_throttle lg_throttle wait \
      not_selected selected no_instruction membar sleeping dispatch_stall tex_throttle; do
    printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' "$r"; done)
  for d in "${details[@]}"; do
    set -- $d
    timeout 150 "$NCU" --clock-control none --profile-from-start off --kernel-name "regex:$2" --launch-skip "$3" \
      --launch-count "$4" --section SpeedOfLight --section Occupancy --section LaunchStats \
      --metrics "${stalls}sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum" \
      "$BIN/chorus-cuda-bench" --profile decode "/tmp/${PROFILE_MODEL:-l8b}.gguf" "$1" > /tmp/ncu_detail.txt 2>&1
    echo "-- ncu detail ${PROFILE_MODEL:-l8b} decode M=$1 $2 skip $3 count $4" | tee -a "$OUT/profile.txt"
    grep -E "gemv_kernel|attention|  Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Grid Size|Dynamic Shared|stalled|hmma|lts__t_bytes|dram__bytes|wavefronts|inst_executed" \
      /tmp/ncu_detail.txt | sed -E 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//; s/ +/ /g' | tee -a "$OUT/profile.txt"
  done
fi

# Per-instruction stall samples of chosen launches (SASS="M SKIP;...": the SKIP-th gemv_kernel
# launch of a decode step with M rows), ncu's source page as CSV ($OUT/sass_M_SKIP.csv).
IFS=';' read -ra sass_runs <<< "${SASS:-}"
for spec in "${sass_runs[@]}"; do
  set -- $spec
  timeout 200 "$NCU" --clock-control none --profile-from-start off --kernel-name regex:gemv_kernel \
    --launch-skip "$2" --launch-count 1 --section SourceCounters --section WarpStateStats -f -o /tmp/sass \
    "$BIN/chorus-cuda-bench" --profile decode "/tmp/${PROFILE_MODEL:-l8b}.gguf" "$1" > /tmp/sass.log 2>&1
  "$NCU" --import /tmp/sass.ncu-rep --page source --csv --print-source sass > "$OUT/sass_$1_$2.csv" 2>> /tmp/sass.log
  echo "-- sass M=$1 skip $2: $(wc -l < "$OUT/sass_$1_$2.csv") lines" | tee -a "$OUT/profile.txt"; tail -n 2 /tmp/sass.log
done

if has enginebench; then
  # Wait for the synthetic 8B model only where esynth started it (on this machine).
  if [ -f /tmp/esynth8b.log ]; then
    for _ in $(seq 1 120); do [ -f /tmp/e8b.done ] && break; sleep 2; done
    tail -n 1 /tmp/esynth8b.log
  fi
  IFS=';' read -ra tunings <<< "${ENGINE_TUNING:-}"
  [ ${#tunings[@]} -eq 0 ] && tunings=("")
  IFS=';' read -ra engine_args <<< "${ENGINE_ARGS:-}"
  [ ${#engine_args[@]} -eq 0 ] && engine_args=("")
  for m in /tmp/e8b.gguf /tmp/e1b.gguf /tmp/*.Q4_1.gguf "$CARRY"/models/*.gguf; do
    [ -f "$m" ] || continue
    for tuning in "${tunings[@]}"; do
      for extra in "${engine_args[@]}"; do
        section "chorus-bench run $m CHORUS_CUDA_TUNING=$tuning $extra"
        echo "-- $m CHORUS_CUDA_TUNING=$tuning $extra" >> "$OUT/enginebench.txt"
        # $extra is word-split on purpose: it holds options and their values.
        # shellcheck disable=SC2086
        CHORUS_CUDA_TUNING=$tuning timeout 300 "$BIN/chorus-bench" run --model "$m" --backend cuda \
          --parallel "${ENGINE_PARALLEL:-1,2,4,8,16,32}" --prompt-tokens 128 --gen-tokens 128 $extra 2>&1 |
          tee -a "$OUT/enginebench.txt" >> "$LOG"
      done
    done
  done
fi

echo "==== summary ===="
for k in "${!R[@]}"; do echo "test $k: rc=${R[$k]} ($(grep -A1000 "==== $k ====" "$LOG" | grep -m1 -E "PASSED|FAILED|^bits" ))"; done
[ -f "$OUT/probe.txt" ] && grep -E "^(bits|rate) " "$OUT/probe.txt"
grep -h "cosine" "$LOG" 2>/dev/null
for m in l1b l8b; do
  [ -f "$OUT/bench_$m.txt" ] && { echo "-- $m (chorus-cuda-bench)"; grep -E "^(\[[^]]*\] |[ckxsepnhqrw][0-9.]+ )?[0-9]+ |prefill|batch-inv|tuning:|^reference:|^greedy tokens digest|do not match" "$OUT/bench_$m.txt"; }
  [ -f "$OUT/trace_$m.txt" ] && { echo "-- $m (step trace)"; grep -E "^N=[0-9]+ |^  launch|^  [a-z_]+(:[A-Z0-9_+]+)? +[0-9]" "$OUT/trace_$m.txt"; }
done
[ -f "$OUT/enginebench.txt" ] && { echo "-- chorus-bench run"; grep -E "^-- |model|^ *[0-9]+ |batch-invariant" "$OUT/enginebench.txt" | head -40; }
# The issue's decode bars against the Engine's two rates (chorus-bench run's columns 2 and 3:
# agg tok/s, and decode t/s, generation apart from the prompts as llama-batched-bench counts it).
[ -f "$OUT/enginebench.txt" ] && awk '
  /^-- / { model = ""; if ($2 ~ /e8b/) model = "8B"; if ($2 ~ /e1b/) model = "1B"; next }
  model != "" && ($1 == "1" || $1 == "8" || $1 == "32") && NF > 3 {
    if (model == "8B") { if ($1 == 1) bar = 580; else if ($1 == 8) bar = 3000; else bar = 10000 }
    else { if ($1 == 1) bar = 2000; else if ($1 == 8) bar = 10000; else bar = 25000 }
    if (!header++) printf "%-5s %4s %10s %10s %8s %s\n", "model", "N", "agg tok/s", "decode t/s", "bar", "decode/bar"
    printf "%-5s %4s %10.0f %10.0f %8d %5.0f %%\n", model, $1, $2, $3, bar, 100 * $3 / bar
  }' "$OUT/enginebench.txt"
exit 0
