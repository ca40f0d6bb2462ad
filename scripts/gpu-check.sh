#!/usr/bin/env bash
# Builds from scratch on the GPU machine and runs every GPU test and benchmark in
# one go; logs and traces go to $OUT (at most 8 files come back from the device).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
LOG="$OUT/gpu-check.log"
: >"$LOG"
pass=0
fail=0
step() { # step NAME CMD...: runs CMD, logs it, counts it
  local name=$1
  shift
  echo "=== $name" | tee -a "$LOG"
  if "$@" >>"$LOG" 2>&1; then
    pass=$((pass + 1))
    echo "PASS $name" | tee -a "$LOG"
  else
    fail=$((fail + 1))
    echo "FAIL $name (exit $?)" | tee -a "$LOG"
    tail -n 30 "$LOG" | sed 's/^/    /'
  fi
}

{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  nvcc --version | tail -n 2
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
} | tee -a "$LOG"

export CUDACXX=${CUDACXX:-/usr/local/cuda/bin/nvcc}
BUILD=build-gpu
rm -rf "$BUILD"
step build bash -c "cmake -S . -B $BUILD -DFT_BUILD_TESTS=OFF -DFT_BUILD_GPU_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  && cmake --build $BUILD -j \$(nproc)"
LIB=$(ls "$BUILD"/libflagtrace.so.* 2>/dev/null | head -n 1)

step "cupti workload (C API, named ranges)" bash -c "
  FLAGOS_TRACE=1 $BUILD/tests/gpu/gpu_workload $OUT/workload_trace.json.gz $OUT/workload_expect.json &&
  python3 tests/gpu/check_workload_trace.py $OUT/workload_trace.json.gz $OUT/workload_expect.json"
step "torch kernel fields: flagtrace vs torch.profiler" \
  python3 tests/gpu/torch_kernel_fields.py --lib "$LIB" --out-dir "$OUT"
gzip -f "$OUT/torch_native_trace.json" 2>/dev/null
step "bench: trace writer" "$BUILD/bench/bench_writer"

echo "$pass passed, $fail failed" | tee -a "$LOG"
[ "$fail" -eq 0 ]
