#!/usr/bin/env bash
# The Python package without torch, offline: the sdist holds the C sources (native/); `pip wheel` of
# it, unpacked and read-only, gives a wheel that works in a fresh venv (the `flagtrace` command, the
# version, `import flagtrace.torch` in one line) with its metadata (summary, author, URL, licence
# file, description); `pip install --no-build-isolation ./python` works from a read-only checkout
# and writes nothing into it; without cmake or without a C compiler the build stops with one line
# and installs nothing (issue 40). Two builds, not three: each compiles the C sources (~40 s).
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
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
# a copy of what the build reads, so that nothing is written into the checkout
tree=$tmp/src
mkdir "$tree"
cp -r "$src"/CMakeLists.txt "$src"/cmake "$src"/include "$src"/src "$src"/completions "$src"/examples "$src"/python \
  "$src"/docs "$src"/LICENSE "$src"/README.md "$src"/CHANGELOG.md "$tree"/
rm -rf "$tree"/python/build "$tree"/python/*.egg-info "$tree"/python/flagtrace/lib "$tree"/python/flagtrace/bin \
       "$tree"/python/flagtrace/_version.py
pipq() { "$@" --no-index --no-build-isolation --no-deps --disable-pip-version-check -q; }
no_torch() { # the build must not see a torch from the system's site-packages
  PYTHONNOUSERSITE=1 "$@"
}
"$py" -c 'import torch' 2>/dev/null && { echo "SKIPPED: torch is importable here; this is the test without torch"; exit 77; }
listing() { (cd "$1" && find . -printf '%p %y %s %T@\n' | sort); }

# 0. the sdist, from the checkout (PEP 517's build_sdist, as pip or `build` would call it)
(cd "$tree/python" && no_torch "$py" -c 'import sys; from setuptools import build_meta as b; b.build_sdist(sys.argv[1])' \
  "$tmp/sdist") >"$tmp/sdist.log" 2>&1 || { cat "$tmp/sdist.log"; fail "building the sdist"; }
sdist=$tmp/sdist/flagtrace-$version.tar.gz
[ -f "$sdist" ] || fail "no $sdist"
tar tzf "$sdist" >"$tmp/sdist.files"
for f in PKG-INFO LICENSE README.md pyproject.toml setup.py flagtrace/analysis.py native/CMakeLists.txt native/LICENSE \
         native/README.md native/cmake/install.cmake native/include/flagtrace/flagtrace.h native/src/core/session.c \
         native/src/cli/main.c native/src/core/flagtrace.map native/completions/flagtrace native/examples/embed.c; do
  grep -qx "flagtrace-$version/$f" "$tmp/sdist.files" || fail "the sdist lacks $f"
done
! grep -E '\.(o|so)$|__pycache__|egg-info/' "$tmp/sdist.files" || fail "the sdist carries build output (above)"

# the checkout from now on read-only; the build must write nothing into it
chmod -R a-w "$tree"
listing "$tree" >"$tmp/tree.before"

# 1. the wheel, from the unpacked sdist alone (read-only), installed into a fresh venv (no system
#    site-packages); step 2 builds from the checkout (one build each: each is a compile of the C sources)
mkdir "$tmp/unpacked"
tar xzf "$sdist" -C "$tmp/unpacked"
chmod -R a-w "$tmp/unpacked"
listing "$tmp/unpacked" >"$tmp/sdist.before"
(cd "$tmp" && no_torch pipq "$py" -m pip wheel -w "$tmp/wheels" "$tmp/unpacked/flagtrace-$version") >"$tmp/wheel.log" 2>&1 ||
  { cat "$tmp/wheel.log"; fail "pip wheel from the unpacked sdist"; }
listing "$tmp/unpacked" >"$tmp/sdist.after"
diff "$tmp/sdist.before" "$tmp/sdist.after" >&2 || fail "building from the unpacked sdist changed it (above)"
whl=$(ls "$tmp"/wheels/flagtrace-"$version"-*.whl) || fail "no flagtrace-$version wheel"
[[ $whl == *-linux_*.whl ]] || fail "$whl is not a platform wheel"
# its metadata: what PyPI and pip show
"$py" - "$whl" "$version" "$src/LICENSE" <<'PY' || fail "the wheel's metadata"
import sys, zipfile
whl, version, licence = sys.argv[1:]
z = zipfile.ZipFile(whl)
di = f"flagtrace-{version}.dist-info/"
meta = z.read(di + "METADATA").decode()
head, _, body = meta.partition("\n\n")
fields = {}
for line in head.splitlines():
    k, _, v = line.partition(": ")
    fields.setdefault(k, []).append(v)
want = {"Summary": ["Vendor-neutral GPU activity profiler: the flagtrace command and torch.profiler integration"],
        "Author": ["the flagtrace authors"], "License": ["BSD-3-Clause"], "License-File": ["LICENSE"],
        "Project-URL": ["Homepage, https://github.com/flagos-ai/flagtrace"],
        "Description-Content-Type": ["text/markdown"]}
for k, v in want.items():
    assert fields.get(k) == v, (k, fields.get(k))
assert body.startswith("# flagtrace\n\nA vendor-neutral GPU activity profiler."), body[:80]
assert z.read(di + "LICENSE") == open(licence, "rb").read(), "dist-info/LICENSE is not the repository's LICENSE"
PY
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

# 3. without cmake, then without a C compiler: one line, nothing installed (the
#    checkout stays read-only: the failures write nothing into it either)
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
listing "$tree" >"$tmp/tree.after"
diff "$tmp/tree.before" "$tmp/tree.after" >&2 || fail "building from the read-only checkout changed it (above)"

echo "1 passed, 0 failed"
