#!/usr/bin/env bash
# Static analysis of the C sources: clang-tidy (checks and why: .clang-tidy, tests/ and
# bench/ each narrow it) and cppcheck (flags and why: below), over the compile database
# of a build directory of their own. Any finding fails (exit 1). `make lint` runs it.
# usage: scripts/lint.sh [BUILD_DIR]   (default build-lint; configured here, not compiled)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-lint}
jobs=${JOBS:-$(nproc)}
for t in clang-tidy run-clang-tidy cppcheck; do
  command -v "$t" >/dev/null || { echo "lint: no $t on PATH (apt-get install clang-tidy cppcheck; scripts/deps.sh ci)" >&2; exit 2; }
done
# The default build (CUDA tracer when CUPTI's headers are here) with tests and benchmarks:
# every file the compile database names is analyzed with the flags it is built with.
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DFT_BUILD_TESTS=ON -DFT_BUILD_BENCH=ON >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; echo "lint: cmake configure failed" >&2; exit 1; }
# the generated files the sources include (the rest is configured by cmake already)
cmake --build "$build" --target ft_git_commit >>"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake -DIN=src/cli/report/page.html -DOUT="$build/report_html.c" -DNAME=ft_report_html -P cmake/embed.cmake
root=$(pwd)
rc=0

# clang-tidy over the files of database DIR matching REGEX; its findings set rc=1.
# The database holds gcc's flags; clang does not know a few (-Wno-format-truncation).
tidy() {
  run-clang-tidy -p "$1" -j "$jobs" -quiet -extra-arg=-Wno-unknown-warning-option "^$root/$2/" >"$1/clang-tidy.log" 2>&1 || true
  if grep -q -E '(warning|error):' "$1/clang-tidy.log"; then
    grep -E -A3 '(warning|error):' "$1/clang-tidy.log" >&2
    echo "lint: clang-tidy findings above (full log: $1/clang-tidy.log)" >&2
    rc=1
  fi
}
echo "lint: clang-tidy ($(clang-tidy --version | sed -n 's/.*version \([0-9.]*\).*/\1/p'))" >&2
tidy "$build" "(src|tests|bench|examples|fuzz)"

# The other accelerators' builds: only what differs from the default (their tracer, the
# injection and preload libraries, their fake vendor library and its tests), clang-tidy.
for acc in metax ppu dcu ascend musa gcu cpu; do
  b=$build/$acc
  mkdir -p "$b"
  cmake -S . -B "$b" -DFLAGOS_ACCELERATOR=$acc -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DFT_BUILD_TESTS=ON \
    -DFT_BUILD_BENCH=OFF >"$b/configure.log" 2>&1 || { cat "$b/configure.log"; echo "lint: cmake ($acc) failed" >&2; exit 1; }
  cmake --build "$b" --target ft_git_commit >>"$b/configure.log" 2>&1 || { cat "$b/configure.log"; exit 1; }
  tidy "$b" "(src/tracers|src/inject|tests/fake_[a-z]*)"
done

# cppcheck:
#   --enable=warning,portability  bugs (leaks, uninitialized reads, bad printf arguments,
#                                 realloc losing its block) and non-portable code; not
#                                 style/performance (C++-oriented, taste) nor
#                                 unusedFunction (wrong for a library across many TUs)
#   --inline-suppr                a `cppcheck-suppress ID ; why` comment on the line before
#                                 a finding cppcheck gets wrong (each says why)
#   --suppress=missingIncludeSystem  it is not given the system headers' paths (by design:
#                                 it models libc itself)
#   -i BUILD_DIR                  generated sources (the embedded HTML, soname stubs)
echo "lint: cppcheck ($(cppcheck --version))" >&2
mkdir -p "$build/cppcheck"
set +e
cppcheck --project="$build/compile_commands.json" --enable=warning,portability --inline-suppr \
  --suppress=missingIncludeSystem -i "$build" --cppcheck-build-dir="$build/cppcheck" -j "$jobs" -q \
  --error-exitcode=1 --template='{file}:{line}: {severity} [{id}] {message}' >"$build/cppcheck.log" 2>&1
c=$?
set -e
if [ $c -ne 0 ] || [ -s "$build/cppcheck.log" ]; then
  cat "$build/cppcheck.log" >&2
  echo "lint: cppcheck findings above" >&2
  rc=1
fi
[ $rc -eq 0 ] && echo "lint: no findings (clang-tidy, cppcheck)" >&2
exit $rc
