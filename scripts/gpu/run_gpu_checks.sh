#!/usr/bin/env bash
# GPU checks for the CUDA backend, run on the device machine from the repository root with
# binaries built elsewhere (nvcc sm_90, cudart static) carried in $CARRY:
#   $CARRY/bin/{test_cuda_gemv,test_cuda_backend,chorus-cuda-bench,chorus-cuda-synth,chorus-bench}
#   $CARRY/lib/libchorus_cuda.so       $CARRY/peer/logits/*  (peer tiny models + references)
# Runs the kernel and backend tests, generates the synthetic q4_k_m models there (too big to
# carry), benchmarks them, and prints a short table last. Logs go to $OUT.
set -uo pipefail
CARRY=${CARRY:-.carry}
OUT=${OUT:-/tmp/chorus-gpu-out}
STAGES=${STAGES:-tests,bench,enginebench}
mkdir -p "$OUT"
BIN=$CARRY/bin
export CHORUS_PEER_DIR=$PWD/$CARRY/peer
export CHORUS_CUDA_LIB=$PWD/$CARRY/lib/libchorus_cuda.so
# libcublasLt.so.13: the toolkit's, else the one PyTorch's wheels carry.
LT=$(ls /usr/local/cuda/lib64/libcublasLt.so.13 2>/dev/null || find / -name 'libcublasLt.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "${LT:-/usr/local/cuda/lib64/x}"):$PWD/$CARRY/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.mem,driver_version --format=csv | tee "$OUT/gpu.txt"
declare -A R

has() { [[ ",$STAGES," == *",$1,"* ]]; }

# Synthetic models in the background while the tests run (16 cores there).
if has bench || has enginebench; then
  # chorus-cuda-synth: q4_k_m shapes with random blocks, seconds instead of minutes.
  ( "$BIN/chorus-cuda-synth" llama3.2-1b /tmp/l1b.gguf > "$OUT/synth1b.log" 2>&1
    "$BIN/chorus-cuda-synth" llama3-8b /tmp/l8b.gguf > "$OUT/synth8b.log" 2>&1 ) &
  SYNTH_PID=$!
fi

if has tests; then
  timeout 300 "$BIN/test_cuda_gemv" > "$OUT/test_gemv.log" 2>&1; R[gemv]=$?
  grep -E "FAILED|Failure|error" "$OUT/test_gemv.log" | head -20
  tail -n 3 "$OUT/test_gemv.log"
  timeout 300 "$BIN/test_cuda_backend" > "$OUT/test_backend.log" 2>&1; R[backend]=$?
  grep -E "cosine|FAILED|Failure|Expected|Which is|error" "$OUT/test_backend.log" | head -40
  tail -n 3 "$OUT/test_backend.log"
fi

if has bench || has enginebench; then
  python3 - <<'PY' 2>&1 | tee "$OUT/ceiling.txt"
import torch
x = torch.empty(2 * 1024**3, dtype=torch.uint8, device='cuda'); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
s.record()
for _ in range(10): y.copy_(x)
e.record(); torch.cuda.synchronize()
print(f"device copy: {2 * x.numel() * 10 / (s.elapsed_time(e) * 1e-3) / 1e12:.2f} TB/s (read+write)")
PY
  wait "$SYNTH_PID"
  tail -n 1 "$OUT/synth1b.log" "$OUT/synth8b.log"
fi

if has bench; then
  for m in l1b l8b; do
    timeout 240 "$BIN/chorus-cuda-bench" /tmp/$m.gguf 1 8 32 2>&1 | tee "$OUT/bench_$m.txt"
  done
fi

# The same decode steps with Programmatic Dependent Launch off (A/B for the notes).
if has nopdl; then
  for m in l1b l8b; do
    CHORUS_CUDA_PDL=0 timeout 240 "$BIN/chorus-cuda-bench" /tmp/$m.gguf 1 32 2>&1 | grep -vE "^(attn|ffn|output|token|blk)" \
      | tee "$OUT/bench_nopdl_$m.txt"
  done
fi

# Where a step's time goes: ncu times every kernel of one eager decode step (M = 1 and 32)
# and of one 512-token prefill on the 8B model; summed per kernel name.
if has profile; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  for what in ${PROFILE_RUNS:-"decode 1" "decode 32" "prefill 1"}; do
    set -- $what
    timeout 200 "$NCU" --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \
      "$BIN/chorus-cuda-bench" --profile $1 /tmp/l8b.gguf $2 > "$OUT/ncu_$1_$2.csv" 2> "$OUT/ncu_$1_$2.err"
    echo "-- ncu 8B $1 M=$2 (rc $?)"
    python3 - "$OUT/ncu_$1_$2.csv" <<'PY'
import csv, sys, collections, re
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows: print("no ncu rows"); sys.exit()
h = rows[0]; ki = h.index("Kernel Name"); vi = h.index("Metric Value"); ui = h.index("Metric Unit")
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows[1:]:
    v = float(r[vi].replace(",", "")); u = r[ui]
    us = v / 1e3 if u == "nsecond" else (v if u == "usecond" else v * 1e3)
    name = re.sub(r"\(.*", "", r[ki]).replace("chorus::cuda::", "")[:60]
    tot[name] += us; cnt[name] += 1
all_us = sum(tot.values())
print(f"kernels {sum(cnt.values())}, sum of kernel times {all_us:.0f} us")
for n, us in sorted(tot.items(), key=lambda x: -x[1])[:12]:
    print(f"{us:9.0f} us {cnt[n]:5d}x  {n}")
PY
  done
  # Stall reasons and throughput of one decode attention kernel and one Q4_K GEMV (M = 1).
  for k in attention_chunk_kernel "gemv_kernel<(chorus::TensorType)12, 1>"; do
    timeout 120 "$NCU" --clock-control none --profile-from-start off --kernel-name "regex:${k:0:14}" --launch-skip 2 \
      --launch-count 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
      "$BIN/chorus-cuda-bench" --profile decode /tmp/l8b.gguf 1 > "$OUT/ncu_detail_${k:0:8}.txt" 2>&1
    echo "-- ncu detail ${k:0:14}"
    grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|Warp Cycles Per Issued|Grid Size|Waves" \
      "$OUT/ncu_detail_${k:0:8}.txt" | head -24
  done
fi

if has enginebench; then
  # The engine needs a tokenizer; chorus-cuda-synth files have none, so try the engine's own
  # synthetic model path when present and the peer tiny model.
  cp "$CARRY/peer/logits/tiny-llama-q4_k_m.gguf" /tmp/tiny.gguf
  # chorus-bench synth writes a tokenizer too, so these run through the whole Engine.
  "$BIN/chorus-bench" synth --shape llama3-8b --type q4_k_m --out /tmp/e8b.gguf > "$OUT/esynth8b.log" 2>&1
  for m in tiny e8b; do
    timeout 240 "$BIN/chorus-bench" run --model /tmp/$m.gguf --backend cuda --parallel 1,2,4,8,16,32 \
      --prompt-tokens 128 --gen-tokens 128 2>&1 \
      | tee "$OUT/enginebench_$m.txt" | tail -n 12
  done
fi

echo "==== summary ===="
for k in "${!R[@]}"; do echo "test $k: rc=${R[$k]}"; done
grep -h "cosine" "$OUT/test_backend.log" 2>/dev/null
for m in l1b l8b tiny e8b; do
  [ -f "$OUT/bench_$m.txt" ] && { echo "-- $m (chorus-cuda-bench)"; grep -E "^[0-9]+ |prefill|batch-inv" "$OUT/bench_$m.txt"; }
  [ -f "$OUT/bench_nopdl_$m.txt" ] && { echo "-- $m PDL off"; grep -E "^[0-9]+ |prefill" "$OUT/bench_nopdl_$m.txt"; }
  [ -f "$OUT/enginebench_$m.txt" ] && { echo "-- $m (chorus-bench run)"; tail -n 9 "$OUT/enginebench_$m.txt"; }
done
