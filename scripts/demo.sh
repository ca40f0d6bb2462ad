#!/usr/bin/env bash
# The main job: build flagtrace and the bundled CUDA sample, record it, summarize
# the trace and write its HTML report. Without an NVIDIA GPU, do that with a trace
# recorded the same way on an H200.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
# The build's output goes to a log, shown only when it fails, so the demo prints its summary.
mkdir -p "$BUILD"
LOG=$BUILD/demo-build.log
: >"$LOG"
quiet() {
  if ! "$@" >>"$LOG" 2>&1; then
    cat "$LOG" >&2
    echo "make demo: the build failed: $* (its output above, and in $LOG)" >&2
    exit 1
  fi
}
if nvidia-smi -L >/dev/null 2>&1 && command -v "${CUDACXX:-nvcc}" >/dev/null 2>&1; then
  echo "make demo: building flagtrace and the CUDA sample (log: $LOG)"
  quiet cmake -S . -B "$BUILD" -DFT_BUILD_GPU_TESTS=ON -DFT_BUILD_TESTS=OFF -DFT_BUILD_BENCH=OFF ${CMAKE_FLAGS:-}
  quiet cmake --build "$BUILD" -j "$JOBS" --target flagtrace_cli flagtrace_inject sample
  rm -f "$BUILD"/sample-*.json.gz
  "$BUILD/flagtrace" record -o "$BUILD/sample-%p.json.gz" -- "$BUILD/tests/gpu/sample"
  "$BUILD/flagtrace" stats "$BUILD"/sample-*.json.gz
  trace=$(ls "$BUILD"/sample-*.json.gz)
else
  echo "make demo: no NVIDIA GPU here; summarizing tests/data/sample_h200.json.gz, recorded on an H200 by this same command"
  # the build packages only (scripts/deps.sh build): no tests, no benchmarks
  echo "make demo: building flagtrace (log: $LOG)"
  quiet cmake -S . -B "$BUILD" -DFT_BUILD_TESTS=OFF -DFT_BUILD_BENCH=OFF ${CMAKE_FLAGS:-}
  quiet cmake --build "$BUILD" -j "$JOBS" --target flagtrace_cli
  trace=tests/data/sample_h200.json.gz
  "$BUILD/flagtrace" stats "$trace"
fi
echo
echo "make demo: the trace is $trace; open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing (Load)"
# the HTML report of the same trace(s): one self-contained file, opened in any browser
"$BUILD/flagtrace" report --force-overwrite -o "$BUILD/report.html" $trace >/dev/null  # replaces the last demo's
echo "make demo: the report is $(cd "$BUILD" && pwd)/report.html"
