#!/usr/bin/env bash
# The main job: build flagtrace and the bundled CUDA sample, record it, summarize
# the trace. Without an NVIDIA GPU, summarize a trace recorded the same way on an H200.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
if nvidia-smi -L >/dev/null 2>&1 && command -v "${CUDACXX:-nvcc}" >/dev/null 2>&1; then
  cmake -S . -B "$BUILD" -DFT_BUILD_GPU_TESTS=ON ${CMAKE_FLAGS:-} >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target flagtrace_cli flagtrace_inject sample
  rm -f "$BUILD"/sample-*.json.gz
  "$BUILD/flagtrace" record -o "$BUILD/sample-%p.json.gz" -- "$BUILD/tests/gpu/sample"
  "$BUILD/flagtrace" stats "$BUILD"/sample-*.json.gz
  echo "open $(ls "$BUILD"/sample-*.json.gz) in https://ui.perfetto.dev or chrome://tracing"
else
  echo "make demo: no NVIDIA GPU here; summarizing tests/data/sample_h200.json.gz, recorded on an H200 by this same command"
  cmake -S . -B "$BUILD" ${CMAKE_FLAGS:-} >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target flagtrace_cli
  "$BUILD/flagtrace" stats tests/data/sample_h200.json.gz
fi
