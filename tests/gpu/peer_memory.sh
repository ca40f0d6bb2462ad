#!/usr/bin/env bash
# PyTorch's memory-profiler tests as a conformance target (issue 51): the peer runner (run.sh,
# compare.py, conftest.py, preflight.py of ../shared/peer/pytorch-profiler, carried in .gpu/peer) run
# on the test files of .gpu/peer-memory (test_memory_profiler.py, test_execution_trace.py,
# test_kineto.py, test_torch_tidy.py, test_cpp_thread.py and its .cpp; PyTorch's, never committed:
# its SOURCE.txt says where each comes from), natively and with `import flagtrace.torch`.
# Passes when every natively-passing test passes with flagtrace; the last line printed is the
# runner's "peer suite: N of M natively-passing tests also pass with flagtrace".
# test_cpp_thread.py crashes torch-cuda itself in about one run in three (SIGSEGV; 2 of 6 native
# runs on an H100, torch 2.11: docs/pytorch.md): a crash there in either mode is torch's; rerun.
#
#   usage: tests/gpu/peer_memory.sh OUTDIR [RUNNER_DIR [TESTS_DIR]]   (from the repository root)
#
# The runner and the tests are copied into OUTDIR/suite (the runner works in its own folder, and
# conftest.py must sit beside the tests); OUTDIR/result holds the runner's logs and compare.txt.
# FT_PEER_MEMORY_FILES: the test files to run (default: every test_*.py of TESTS_DIR);
# FT_PEER_CAP (seconds per mode, default here 150) and the runner's other knobs pass through.
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 OUTDIR [RUNNER_DIR [TESTS_DIR]]" >&2
  exit 2
fi
OUT=$1
RUNNER=${2:-.gpu/peer}
TESTS=${3:-.gpu/peer-memory}
for f in run.sh compare.py conftest.py preflight.py pytest.ini _peer_stub.py; do
  if [ ! -f "$RUNNER/$f" ]; then
    echo "peer memory: no $RUNNER/$f (copy ../shared/peer/pytorch-profiler to .gpu/peer and carry .gpu)"
    exit 1
  fi
done
if ! ls "$TESTS"/test_*.py >/dev/null 2>&1; then
  echo "peer memory: no test files in $TESTS (PyTorch's test/profiler files, see docs/measurements.md)"
  exit 1
fi
rm -rf "$OUT/suite" "$OUT/result"
mkdir -p "$OUT/suite" "$OUT/result" || exit 2
# the runner's own test files stay out: only the memory suite's run
for f in run.sh compare.py conftest.py preflight.py pytest.ini _peer_stub.py; do
  cp "$RUNNER/$f" "$OUT/suite/"
done
# the tests and what they load beside them (test_cpp_thread.cpp, profiler_utils_mock_events.json, ...)
find "$TESTS" -maxdepth 1 -type f ! -name 'README*' ! -name 'SOURCE*' -exec cp {} "$OUT/suite/" \;
# the memory profiler's first; test_cpp_thread.py last (it compiles a C++ extension in each mode, ~1 min)
ORDER="test_memory_profiler.py test_torch_tidy.py test_execution_trace.py test_kineto.py test_cpp_thread.py"
DEFAULT=""
for f in $ORDER $(cd "$OUT/suite" && ls test_*.py); do
  [ -f "$OUT/suite/$f" ] && case " $DEFAULT " in *" $f "*) ;; *) DEFAULT="$DEFAULT $f" ;; esac
done
FILES=${FT_PEER_MEMORY_FILES:-${DEFAULT# }}
echo "peer memory: runner from $RUNNER, tests from $TESTS: $FILES"
FT_PEER_FILES="$FILES" FT_PEER_CAP=${FT_PEER_CAP:-150} bash "$OUT/suite/run.sh" "$OUT/result"
