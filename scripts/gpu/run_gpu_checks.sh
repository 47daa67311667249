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
export LD_LIBRARY_PATH=$(dirname "${LT:-/usr/local/cuda/lib64/x}"):${LD_LIBRARY_PATH:-}
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

if has enginebench; then
  # The engine needs a tokenizer; chorus-cuda-synth files have none, so try the engine's own
  # synthetic model path when present and the peer tiny model.
  cp "$CARRY/peer/logits/tiny-llama-q4_k_m.gguf" /tmp/tiny.gguf
  for m in tiny; do
    timeout 200 "$BIN/chorus-bench" run --model /tmp/$m.gguf --backend cuda --parallel 1,2,4,8,16,32 2>&1 \
      | tee "$OUT/enginebench_$m.txt" | tail -n 12
  done
fi

echo "==== summary ===="
for k in "${!R[@]}"; do echo "test $k: rc=${R[$k]}"; done
grep -h "cosine" "$OUT/test_backend.log" 2>/dev/null
for m in l1b l8b tiny; do
  [ -f "$OUT/bench_$m.txt" ] && { echo "-- $m (chorus-cuda-bench)"; grep -E "^[0-9]+ |prefill|batch-inv" "$OUT/bench_$m.txt"; }
  [ -f "$OUT/enginebench_$m.txt" ] && { echo "-- $m (chorus-bench run)"; grep -E "batch-invariant" "$OUT/enginebench_$m.txt"; }
done
