#!/usr/bin/env bash
# The Python package without torch, offline: `pip wheel` gives a wheel that works in a
# fresh venv (the `flagtrace` command, the version, `import flagtrace.torch` in one
# line); `pip install --no-build-isolation ./python` works; without cmake or without
# a C compiler the build stops with one line and installs nothing.
# usage: test_wheel.sh SOURCE_DIR VERSION HAVE_INJECT(ON/OFF)   (exit 77: skipped)
set -euo pipefail
src=$1 version=$2 inject=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
# Debian's python3 with python3-setuptools, python3-wheel, python3-venv, python3-pip
# (scripts/deps.sh test); pip then needs no network (--no-index --no-build-isolation)
py=
for cand in /usr/bin/python3 python3; do
  if "$cand" -c 'import setuptools, wheel, venv, ensurepip, pip' 2>/dev/null; then py=$(command -v "$cand"); break; fi
done
[ -n "$py" ] || { echo "SKIPPED: no python3 with setuptools, wheel, venv and pip (apt-get install python3-setuptools python3-wheel python3-venv python3-pip)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a copy of what the build reads, so that nothing is written into the checkout
tree=$tmp/src
mkdir "$tree"
cp -r "$src"/CMakeLists.txt "$src"/cmake "$src"/include "$src"/src "$src"/completions "$src"/examples "$src"/python "$tree"/
rm -rf "$tree"/python/build "$tree"/python/*.egg-info "$tree"/python/flagtrace/lib "$tree"/python/flagtrace/bin \
       "$tree"/python/flagtrace/_version.py
pipq() { "$@" --no-index --no-build-isolation --no-deps --disable-pip-version-check -q; }
no_torch() { # the build must not see a torch from the system's site-packages
  PYTHONNOUSERSITE=1 "$@"
}
"$py" -c 'import torch' 2>/dev/null && { echo "SKIPPED: torch is importable here; this is the test without torch"; exit 77; }

# 1. the wheel, installed into a fresh venv (no system site-packages)
no_torch pipq "$py" -m pip wheel -w "$tmp/wheels" "$tree/python" >"$tmp/wheel.log" 2>&1 ||
  { cat "$tmp/wheel.log"; fail "pip wheel"; }
whl=$(ls "$tmp"/wheels/flagtrace-"$version"-*.whl) || fail "no flagtrace-$version wheel"
[[ $whl == *-linux_*.whl ]] || fail "$whl is not a platform wheel"
"$py" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --no-index --disable-pip-version-check -q "$whl" || fail "installing the wheel"
cd "$tmp"
out=$("$tmp/venv/bin/flagtrace" --version)
[[ $out == "flagtrace $version ("* ]] || fail "flagtrace --version from the wheel: $out"
"$tmp/venv/bin/flagtrace" stats --report kernels "$src/tests/data/sample_h200.json.gz" |
  grep -q "saxpy(float, float const\*, float\*, int)" || fail "flagtrace stats from the wheel"
[ "$("$tmp/venv/bin/python" -c 'import flagtrace; print(flagtrace.__version__)')" = "$version" ] || fail "__version__"
# flagtrace.analysis finds the command the wheel ships (no FLAGTRACE_EXE, nothing on PATH)
env -u FLAGTRACE_EXE PATH=/usr/bin:/bin "$tmp/venv/bin/python" -c 'import sys; from flagtrace import analysis as a
s = a.load(sys.argv[1]); assert a.find_exe().startswith(sys.argv[2]), a.find_exe()
assert any(r["name"].startswith("saxpy") for r in s.rows("kernels"))' "$src/tests/data/sample_h200.json.gz" "$tmp/venv" ||
  fail "flagtrace.analysis from the wheel"
"$tmp/venv/bin/python" -c 'import flagtrace.torch as t; assert t.available is False' 2>err.txt || fail "import flagtrace.torch"
[ "$(cat err.txt)" = "flagtrace.torch: PyTorch is not installed: nothing to profile" ] || fail "import flagtrace.torch said: $(cat err.txt)"
if [ "$inject" = ON ]; then
  got=$(env -u FLAGTRACE_INJECT_LIBRARY "$tmp/venv/bin/flagtrace" record -- sh -c 'echo "$CUDA_INJECTION64_PATH"' 2>/dev/null)
  [[ $(readlink -f "$got") == "$tmp"/venv/lib/python*/site-packages/flagtrace/lib/libflagtrace_inject.so ]] ||
    fail "record from the wheel injects '$got'"
  [ -f "$(dirname "$(readlink -f "$got")")/libflagtrace_preload.so" ] || fail "the wheel lacks libflagtrace_preload.so"
  shim=$(env -u FLAGTRACE_INJECT_LIBRARY "$tmp/venv/bin/flagtrace" record --capture-range=cudaProfilerApi -- \
    sh -c 'echo "$FLAGTRACE_PRELOAD_SHIM"' 2>/dev/null)
  [ "$shim" = "$(dirname "$(readlink -f "$got")")/libflagtrace_cuda_shim.so" ] || fail "record --capture-range from the wheel: shim '$shim'"
fi

# 2. pip install straight from the tree (setuptools and wheel from the system)
"$py" -m venv --system-site-packages "$tmp/venv2"
no_torch pipq "$tmp/venv2/bin/pip" install "$tree/python" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "pip install --no-build-isolation ./python"; }
[[ $("$tmp/venv2/bin/flagtrace" --version) == "flagtrace $version ("* ]] || fail "flagtrace from pip install"

# 3. without cmake, then without a C compiler: one line, nothing installed
mkdir "$tmp/bin"
for t in sh cc gcc cmake; do
  for p in $(type -ap "$t"); do ln -sf "$p" "$tmp/bin/$t"; break; done
done
for missing in cmake "a C compiler"; do
  "$py" -m venv --system-site-packages "$tmp/venv3"
  hide=cmake; [ "$missing" = cmake ] || hide="cc gcc"
  (cd "$tmp/bin" && rm -f $hide)
  set +e
  PATH=$tmp/bin CC= no_torch pipq "$tmp/venv3/bin/pip" install "$tree/python" >"$tmp/bad.log" 2>&1
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "pip install without $missing succeeded"
  n=$(grep -c "^ *flagtrace: building the Python package needs $missing: no [a-z ]* on PATH (apt-get install [a-z]*)$" "$tmp/bad.log")
  [ "$n" = 1 ] || { cat "$tmp/bad.log"; fail "pip install without $missing: not one clear line"; }
  if "$tmp/venv3/bin/python" -c 'import flagtrace' 2>/dev/null || ls "$tmp"/venv3/bin/flagtrace 2>/dev/null; then
    fail "pip install without $missing left flagtrace installed"
  fi
  rm -rf "$tmp/venv3"
  for t in cmake cc gcc; do [ -e "$tmp/bin/$t" ] || { p=$(type -P "$t") && ln -s "$p" "$tmp/bin/$t"; }; done
done
echo "1 passed, 0 failed"
