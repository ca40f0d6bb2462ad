#!/usr/bin/env bash
# libflagtrace exports exactly the functions its public headers mark FT_EXPORT, each
# versioned FLAGTRACE_0 by src/core/flagtrace.map, and the map lists no other name.
# usage: test_symbols.sh LIBRARY SOURCE_DIR
set -euo pipefail
lib=$1 src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the headers' FT_EXPORT declarations: the name before the first '('
sed -n 's/^FT_EXPORT [^(]*[ *]\(ft_[a-z0-9_]*\)(.*/\1/p' "$src"/include/flagtrace/*.h | sort >"$tmp/headers"
# the map's global names (one "name;" a line between global: and local:)
sed -n '/global:/,/local:/s/^ *\(ft_[a-z0-9_]*\);$/\1/p' "$src/src/core/flagtrace.map" | sort >"$tmp/map"
# the library's defined dynamic symbols but the version node itself (type A)
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sort >"$tmp/lib_versioned"
sed 's/@@*.*//' "$tmp/lib_versioned" >"$tmp/lib"
[ -s "$tmp/headers" ] || fail "no FT_EXPORT declarations found in $src/include/flagtrace"
diff -u "$tmp/headers" "$tmp/map" >&2 || fail "src/core/flagtrace.map differs from the headers' FT_EXPORT functions (above)"
diff -u "$tmp/map" "$tmp/lib" >&2 || fail "$lib exports other symbols than src/core/flagtrace.map (above)"
bad=$(grep -v '@@FLAGTRACE_0$' "$tmp/lib_versioned" || true)
[ -z "$bad" ] || fail "symbols not versioned FLAGTRACE_0: $bad"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libflagtrace.so.0 ] || fail "SONAME '$soname', want libflagtrace.so.0"
echo "$(wc -l <"$tmp/map") symbols, all FLAGTRACE_0; 1 passed, 0 failed"
