#!/usr/bin/env bash
# Installs the Debian packages a profile needs, only those missing:
#   build  what `make demo` needs: compile the library and the flagtrace command
#   test   build + what `make test` needs (cmocka, yajl, the Python test tools, pkg-config, groff,
#          headless chromium for the HTML report's test, node and npm for its Playwright test)
#   ci     test + what `.ci/run` adds (clang's libFuzzer, valgrind); the default
#   hta    test + Holistic Trace Analysis's Python packages (its source is fetched apart)
set -euo pipefail
profile=${1:-ci}
build=(cmake gcc g++ make zlib1g-dev libisal-dev) # libisal-dev: ISA-L's fast gzip (optional in CMake)
# libyajl-dev: the tests' and benchmarks' independent JSON parser (stats has its own)
# python3-setuptools/-wheel/-venv/-pip: the wheel test builds and installs offline
# python3-pandas: flagtrace.analysis's DataFrames (tests/python/test_analysis.py)
# python3-distributed: Dask.distributed, for examples/dask_stats.py (tests/e2e/test_dask_stats.py)
test=("${build[@]}" libyajl-dev pkg-config libcmocka-dev python3 python3-pytest python3-setuptools python3-wheel python3-venv
      python3-pip python3-pandas python3-distributed groff-base chromium nodejs)
# npm comes with some node packages (NodeSource's) and apart in Debian's: asked only when missing
[ "$profile" != build ] && ! command -v npm >/dev/null && test+=(npm)
# libfmt-dev: kineto's headers, for the adaptor's CPU test (cmake -DFT_KINETO_SRC=...)
ci=("${test[@]}" clang libclang-rt-dev valgrind libfmt-dev)
# clang-format, clang-tidy, cppcheck: scripts/check-format.sh and scripts/lint.sh (`make lint`)
ci+=(clang-format clang-tidy cppcheck)
# Holistic Trace Analysis's own needs, for the comparisons that run it from a checkout of its
# source (FT_HTA_PATH: tests/gpu/hta_compare.py, hta_analyses.py, bench P5 HTA); never in CI
hta=("${test[@]}" python3-plotly python3-networkx python3-pydot python3-yaml python3-psutil)
case $profile in
  build) need=("${build[@]}") ;;
  test) need=("${test[@]}") ;;
  ci) need=("${ci[@]}") ;;
  hta) need=("${hta[@]}") ;;
  *) echo "usage: scripts/deps.sh [build|test|ci|hta]" >&2; exit 2 ;;
esac
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "flagtrace: missing packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "flagtrace: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
