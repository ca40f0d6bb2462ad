#!/usr/bin/env bash
# `make demo`'s script prints its summary, not the build's output: cmake (a stub here that
# prints noise and "builds" by linking the real binary) is heard only when it fails.
# usage: test_demo.sh FLAGTRACE_EXE
set -uo pipefail
exe=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/bin"
# no GPU here, whatever the machine has: the demo's CPU path
printf '#!/bin/sh\nexit 1\n' >"$tmp/bin/nvidia-smi"
cat >"$tmp/bin/cmake" <<STUB
#!/bin/sh
echo "-- cmake noise line 1"; echo "[ 50%] Building C object noise.c.o"; echo "a warning" >&2
[ -n "\${FAIL_BUILD:-}" ] && [ "\$1" = --build ] && { echo "error: the compiler broke" >&2; exit 2; }
if [ "\$1" = --build ]; then mkdir -p "\$2"; ln -sf "$exe" "\$2/flagtrace"; fi
exit 0
STUB
chmod +x "$tmp/bin/"*
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

out=$(cd "$root" && PATH="$tmp/bin:$PATH" BUILD="$tmp/b" JOBS=1 scripts/demo.sh 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "demo exited $rc: $out"
grep -q "noise\|warning" <<<"$out" && fail "the build's output reached the terminal: $out"
# its lines: the no-GPU note, the build line, then stats' summary and the two closing lines
[ "$(sed -n 2p <<<"$out")" = "make demo: building flagtrace (log: $tmp/b/demo-build.log)" ] || fail "line 2: $out"
[ "$(sed -n 3p <<<"$out")" = "flagtrace stats: 139 trace entries from 1 file" ] || fail "line 3: $out"
[ "$(tail -n 1 <<<"$out")" = "make demo: the report is $tmp/b/report.html" ] || fail "last line: $out"
grep -c "^make demo: " <<<"$out" | grep -qx 4 || fail "make demo lines: $out"
grep -q "Building C object noise.c.o" "$tmp/b/demo-build.log" || fail "no log kept"

# a failed build shows the log and says so, status 1
out=$(cd "$root" && FAIL_BUILD=1 PATH="$tmp/bin:$PATH" BUILD="$tmp/c" JOBS=1 scripts/demo.sh 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "failed build: status $rc"
grep -q "error: the compiler broke" <<<"$out" || fail "failed build: its output not shown: $out"
grep -q "^make demo: the build failed: cmake --build" <<<"$out" || fail "failed build: no line saying so: $out"
[ $fails -eq 0 ] || exit 1
echo "1 passed, 0 failed"
