#!/usr/bin/env bash
# valgrind memcheck over the unit tests, the fake-CUPTI tests and the end-to-end
# tests (the flagtrace binary itself under valgrind). Any error or definite leak fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite"
FAKE=$BUILD/tests/libfake_cupti.so
fail=0
run() {
  echo "=== valgrind: $*"
  if ! "$@"; then
    echo "FAIL (valgrind): $*"
    fail=1
  fi
}
for t in test_json test_json_scan test_deflate test_store test_env test_session test_random_traces test_memory; do
  run env FLAGOS_TRACER_LIBRARY=/nonexistent $VG "$BUILD/tests/$t" >/dev/null
done
if [ -f "$FAKE" ]; then
  for t in test_cupti_fake test_threads; do
    run env FLAGOS_TRACER_LIBRARY="$FAKE" $VG "$BUILD/tests/$t" >/dev/null
  done
  run env FT_TEST_WRAPPER="$VG" FLAGOS_TRACER_LIBRARY="$FAKE" FLAGTRACE_INJECT_LIBRARY="$BUILD/libflagtrace_inject.so" \
    python3 tests/e2e/test_record.py "$BUILD/flagtrace" "$BUILD/tests/inject_driver"
  run env FT_TEST_WRAPPER="$VG" FLAGOS_TRACER_LIBRARY="$FAKE" FLAGTRACE_INJECT_LIBRARY="$BUILD/libflagtrace_inject.so" \
    python3 tests/e2e/test_record_preload.py "$BUILD/flagtrace" "$BUILD/tests/preload_driver" \
    "$BUILD/tests/libfake_runtime.so" cupti
fi
run env FLAGOS_TRACER_LIBRARY=/nonexistent $VG "$BUILD/embed_example" "$BUILD/valgrind-embed.json.gz" >/dev/null
run env FT_TEST_WRAPPER="$VG" python3 tests/e2e/test_stats.py "$BUILD/flagtrace" tests/data
if [ "$fail" -ne 0 ]; then
  echo "valgrind: errors found"
  exit 1
fi
echo "valgrind: no errors, no definite leaks"
