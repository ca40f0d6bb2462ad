#!/usr/bin/env bash
# Installs the build into a temporary prefix and uses only that prefix: builds
# examples/embed.c with pkg-config and with find_package(flagtrace), runs both, runs
# the installed flagtrace CLI, checks the .pc paths, the exported target, docs/packaging.md's
# private-prefix example and `uninstall`, and checks a read-only prefix fails cleanly.
# usage: test_install.sh BUILD_DIR SOURCE_DIR VERSION HAVE_INJECT(ON/OFF) [FT_SANITIZE]
set -euo pipefail
build=$1 src=$2 version=$3 inject=$4 san=${5:-}
# a sanitized library needs a program built with the same sanitizers
sanflags=${san:+-fsanitize=$san}
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
p=$tmp/prefix

cmake --install "$build" --prefix "$p" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
libdir=$(dirname "$(find "$p" -name libflagtrace.so)")
[ -n "$libdir" ] || fail "no libflagtrace.so under $p"
real=$(readlink -f "$libdir/libflagtrace.so")
[ "$(basename "$real")" = "libflagtrace.so.$version" ] || fail "libflagtrace.so -> $real, want libflagtrace.so.$version"
soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libflagtrace.so.0 ] && [ -L "$libdir/$soname" ] || fail "SONAME '$soname' or its link missing"
for f in include/flagtrace/flagtrace.h include/flagtrace/version.h include/flagtrace/device_tracer.h bin/flagtrace \
         share/man/man1/flagtrace.1 share/man/man1/flagtrace-record.1 share/man/man1/flagtrace-stats.1 \
         share/man/man1/flagtrace-report.1 share/bash-completion/completions/flagtrace share/doc/flagtrace/LICENSE; do
  [ -f "$p/$f" ] || fail "$f not installed"
done
# one page per command the installed --help lists, nothing else (no build stamp)
want_man=$(cd "$p/bin" && ./flagtrace --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/flagtrace-\1.1/p' | sort | tr '\n' ' ')
got_man=$(cd "$p/share/man/man1" && ls -A | grep -v '^flagtrace\.1$' | sort | tr '\n' ' ')
[ "$got_man" = "$want_man" ] || fail "man1 holds '$got_man', want '$want_man'"
[ -f "$libdir/pkgconfig/flagtrace.pc" ] || fail "flagtrace.pc not in $libdir/pkgconfig"
[ -f "$libdir/cmake/flagtrace/flagtraceConfigVersion.cmake" ] || fail "CMake package not in $libdir/cmake/flagtrace"
grep -q "FT_VERSION_STRING \"$version\"" "$p/include/flagtrace/version.h" || fail "version.h does not say $version"
if [ "$inject" = ON ]; then
  [ -f "$libdir/flagtrace/libflagtrace_inject.so" ] || fail "libflagtrace_inject.so not in $libdir/flagtrace"
  [ -f "$libdir/flagtrace/libflagtrace_preload.so" ] || fail "libflagtrace_preload.so not in $libdir/flagtrace"
  if [ -f "$build/libflagtrace_cuda_shim.so" ]; then # CUDA builds: --capture-range's libcuda shim
    [ -f "$libdir/flagtrace/libflagtrace_cuda_shim.so" ] || fail "libflagtrace_cuda_shim.so not in $libdir/flagtrace"
  fi
fi

# Nothing from the source or build tree: the example is copied, only $p is searched.
mkdir "$tmp/app"
cp "$src/examples/embed.c" "$tmp/app/"
cd "$tmp/app"
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig PKG_CONFIG_PATH=
unset CPATH C_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH FLAGTRACE_INJECT_LIBRARY
[ "$(pkg-config --modversion flagtrace)" = "$version" ] || fail "pkg-config --modversion"
flags=$(pkg-config --cflags --libs flagtrace)
case "$flags" in *"$build"*|*"$src"*) fail "pkg-config flags name the build or source tree: $flags" ;; esac
cc -std=c11 -Wall -Werror $sanflags embed.c $flags -Wl,-rpath,"$(pkg-config --variable=libdir flagtrace)" -o embed_pc
# the .pc file's paths are plain: the prefix itself, no "..", "." or "//" (issue 40)
[ "$(pkg-config --variable=includedir flagtrace)" = "$p/include" ] || fail "includedir: $(pkg-config --variable=includedir flagtrace)"
[ "$(pkg-config --variable=libdir flagtrace)" = "$libdir" ] || fail "libdir: $(pkg-config --variable=libdir flagtrace), want $libdir"
[ "$(echo $flags)" = "-I$p/include -L$libdir -lflagtrace" ] || fail "pkg-config --cflags --libs: $flags"
# the exported CMake target names the include directory once
incs=$(sed -n 's/^ *INTERFACE_INCLUDE_DIRECTORIES "\(.*\)"$/\1/p' "$libdir/cmake/flagtrace/flagtraceTargets.cmake")
[ "$incs" = '${_IMPORT_PREFIX}/include' ] || fail "flagtraceTargets.cmake include directories: '$incs'"
# docs/packaging.md's private-prefix example, run as written (PREFIX, app.c): it starts;
# the same build without its rpath does not find libflagtrace.so.0, and does with LD_LIBRARY_PATH
doc=$src/docs/packaging.md
sed -n '/^<!-- install-example:/,/^```$/p' "$doc" | sed '1,2d;$d' >example.sh
[ "$(wc -l <example.sh)" = 3 ] || fail "no 3-line install-example block in $doc: $(cat example.sh)"
cp embed.c app.c
(PREFIX=$p PKG_CONFIG_LIBDIR=; export PREFIX
 if [ -n "$sanflags" ]; then sed -i "s/^cc /cc $sanflags /" example.sh; fi
 FLAGOS_TRACER_LIBRARY=/nonexistent/libvendor.so bash -e example.sh >example.log 2>&1) ||
  { cat example.log; fail "docs/packaging.md's pkg-config example"; }
grep -q "6 CPU ranges" example.log || fail "docs/packaging.md's example program: $(cat example.log)"
cc -std=c11 $sanflags app.c $flags -o app_norpath
if ./app_norpath >norpath.log 2>&1; then fail "a program without rpath found the private prefix's library (the doc's warning is wrong)"; fi
grep -q "libflagtrace.so.0: cannot open shared object file" norpath.log || fail "without rpath: $(cat norpath.log)"
FLAGOS_TRACER_LIBRARY=/nonexistent/libvendor.so LD_LIBRARY_PATH=$libdir ./app_norpath >norpath.log 2>&1 ||
  fail "LD_LIBRARY_PATH=$libdir ./app: $(cat norpath.log)"
cat >CMakeLists.txt <<CM
cmake_minimum_required(VERSION 3.20)
project(embed_app LANGUAGES C)
find_package(flagtrace $version REQUIRED)
add_executable(embed_cm embed.c)
target_link_libraries(embed_cm PRIVATE flagtrace::flagtrace)
CM
cmake -S . -B cm -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_FLAGS="$sanflags" >cm.log 2>&1 || { cat cm.log; fail "find_package(flagtrace) configure"; }
cmake --build cm >>cm.log 2>&1 || { cat cm.log; fail "find_package(flagtrace) build"; }
if grep -rqs -e "$build" -e "$src/include" cm/CMakeFiles/embed_cm.dir/flags.make cm/CMakeFiles/embed_cm.dir/link.txt; then
  fail "the find_package build uses the build or source tree"
fi
# a version newer than this one is refused by the version file
sed "s/flagtrace $version REQUIRED/flagtrace 99.0 REQUIRED/" CMakeLists.txt >CMakeLists.tmp && mv CMakeLists.tmp CMakeLists.txt
if cmake -S . -B cm99 -DCMAKE_PREFIX_PATH="$p" >cm99.log 2>&1; then fail "find_package(flagtrace 99.0) was accepted"; fi

for exe in ./embed_pc ./cm/embed_cm; do
  lib=$(ldd "$exe" | sed -n 's/.*libflagtrace.so.0 => \([^ ]*\).*/\1/p')
  [ "$(readlink -f "$lib")" = "$real" ] || fail "$exe loads libflagtrace from '$lib', not $p"
  FLAGOS_TRACER_LIBRARY=/nonexistent/libvendor.so "$exe" "$tmp/app/${exe##*/}.json.gz" >run.log || fail "$exe failed"
  grep -q "6 CPU ranges" run.log || fail "$exe: $(cat run.log)"
done

# The installed CLI: its version, and stats on the example's trace and a bundled one.
out=$("$p/bin/flagtrace" --version)
[[ $out == "flagtrace $version ("* ]] || fail "installed flagtrace --version: $out"
"$p/bin/flagtrace" stats --format json "$tmp/app/embed_pc.json.gz" >stats.json || fail "installed flagtrace stats"
python3 - stats.json <<'PY' || fail "stats of the example's trace"
import json, sys
doc = json.load(open(sys.argv[1]))
ops = {r["name"]: r for r in doc["ops"]}
assert set(ops) == {"step", "compute"} and ops["step"]["calls"] == 3, doc["ops"]
PY
"$p/bin/flagtrace" stats --report kernels "$src/tests/data/sample_h200.json.gz" | grep -q "saxpy(float, float const\*, float\*, int)" ||
  fail "installed flagtrace stats on tests/data/sample_h200.json.gz"
if [ "$inject" = ON ]; then # record finds the libraries it was installed with
  # the CUDA driver's injection variable on CUDA builds, the preload library on the others
  if "$p/bin/flagtrace" --version | grep -q "accelerator cuda"; then
    got=$("$p/bin/flagtrace" record -- sh -c 'echo "$CUDA_INJECTION64_PATH"')
    want=$libdir/flagtrace/libflagtrace_inject.so
  else
    got=$("$p/bin/flagtrace" record -- sh -c 'echo "${LD_PRELOAD##*[ :]}"' 2>/dev/null)
    want=$libdir/flagtrace/libflagtrace_preload.so
  fi
  [ "$(readlink -f "$got")" = "$(readlink -f "$want")" ] || fail "installed record uses '$got', not $want"
fi

# Uninstall: every installed file goes, flagtrace's own directories go, a file of
# someone else's in the prefix stays; a second uninstall removes nothing.
echo mine >"$libdir/not_flagtrace.txt"
cmake --build "$build" --target uninstall >un.log 2>&1 || { cat un.log; fail "uninstall"; }
n=$(grep -c "" "$build/install_manifest.txt") # its last line has no newline
grep -q "^flagtrace: removed $n of the $n files in $build/install_manifest.txt$" un.log || { cat un.log; fail "uninstall's line"; }
left=$(cd "$p" && find . ! -type d | sort)
[ "$left" = "./${libdir#"$p/"}/not_flagtrace.txt" ] || fail "after uninstall, left in the prefix: $left"
for d in include/flagtrace "${libdir#"$p/"}/cmake/flagtrace" "${libdir#"$p/"}/flagtrace" share/doc/flagtrace; do
  [ ! -e "$p/$d" ] || fail "uninstall left $d"
done
cmake --build "$build" --target uninstall >un.log 2>&1 || { cat un.log; fail "second uninstall"; }
grep -q "^flagtrace: removed 0 of the $n files" un.log || { cat un.log; fail "second uninstall's line"; }

# A prefix we may not write: one line, non-zero, and nothing installed.
ro=$tmp/readonly
mkdir "$ro"
as_user=()
if [ "$(id -u)" -eq 0 ]; then # root writes anywhere: try as nobody
  command -v setpriv >/dev/null || { echo "SKIPPED: read-only prefix check needs setpriv as root"; exit 77; }
  chmod 755 "$tmp"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
chmod 555 "$ro"
set +e
"${as_user[@]}" cmake --install "$build" --prefix "$ro/usr" >ro.log 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "install into a read-only prefix succeeded"
grep -q "^flagtrace: cannot install into $ro/usr: $ro is not a writable directory; nothing was installed" ro.log ||
  { cat ro.log; fail "read-only prefix: no clear line"; }
[ -z "$(ls -A "$ro")" ] || fail "read-only prefix: something was installed: $(ls -A "$ro")"
echo "1 passed, 0 failed"
