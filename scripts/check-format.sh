#!/usr/bin/env bash
# Checks the C sources against .clang-format: prints each file clang-format would
# change (with the diff) and exits 1 if any; --count only prints "N lines in M files"
# a `clang-format -i` would change; --fix rewrites them.
# usage: scripts/check-format.sh [--count|--fix] [FILE...]   (default: every tracked C file)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=check
case ${1:-} in --count|--fix) mode=${1#--}; shift ;; esac
cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "check-format: no $cf on PATH (apt-get install clang-format; scripts/deps.sh ci)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  # C and C++ sources of the library, CLI, tests, benchmarks, fuzzers and examples
  mapfile -t files < <(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' 'bench/*.[ch]' 'fuzz/*.[ch]' 'examples/*.[ch]')
else
  files=("$@")
fi
if [ "$mode" = fix ]; then
  "$cf" -i --style=file "${files[@]}"
  exit 0
fi
lines=0 bad=0
for f in "${files[@]}"; do
  d=$("$cf" --style=file "$f" | diff -u --label "$f" --label "$f (clang-format)" "$f" - || true)
  [ -n "$d" ] || continue
  bad=$((bad + 1))
  lines=$((lines + $(grep -c '^[-+][^-+]\|^[-+]$' <<<"$d" || true)))
  [ "$mode" = check ] && printf '%s\n' "$d"
done
echo "check-format: ${lines} lines in ${bad} of ${#files[@]} files differ from .clang-format" >&2
[ "$mode" = count ] || [ "$bad" -eq 0 ]
