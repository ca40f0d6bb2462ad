#!/usr/bin/env bash
# The bash completion, sourced into a plain bash: commands, each command's options
# (as its --help lists them), option values, comma lists and the command after --.
# usage: test_completion.sh FLAGTRACE_EXE COMPLETION_FILE
set -uo pipefail
exe=$1
# shellcheck source=/dev/null
source "$2"
fails=0
complete_line() { # words...; the last word is the one being completed
  COMP_WORDS=("$exe" "$@")
  COMP_CWORD=$#
  _flagtrace
  printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' '
}
expect() { # expected-reply words...
  local want=$1 got
  shift
  got=$(complete_line "$@")
  if [ "$got" != "$want" ]; then
    echo "FAIL: flagtrace $* -> '$got', want '$want'" >&2
    fails=$((fails + 1))
  fi
}
expect "stats " st
expect "report " rep
expect "record " rec
expect "--help --version -V -h advise capture diff record report stats " ""
expect "advise " adv
expect "csv json table " advise -f ""
expect "diff " di
expect "auto group name " diff --kernels ""
expect "--capture-range= " record --ca
expect "cudaProfilerApi none " record --capture-range = ""
# --inject's values: cuda only on a CUDA build
if [[ $("$exe" --version) == *"(accelerator cuda,"* ]]; then inject="cuda preload "; else inject="preload "; fi
expect "$inject" record --inject = ""
expect "preload " record --inject pre
expect "calls count " stats --sort c
expect "kernel,memcpy kernel,memset " record -t kernel,mem
expect "memcpy memset " record --trace mem
expect "csv " stats --format c
expect "csv json table tsv " stats -f ""
expect "kernels,memops kernels,memory kernels,memsize " stats --report kernels,m
# nsys's report names, as stats --help gives them
expect "kernels,cuda_api_sum kernels,cuda_gpu_kern_sum kernels,cuda_gpu_mem_size_sum kernels,cuda_gpu_mem_time_sum kernels,cuda_gpu_trace " stats --report kernels,cuda_
expect "nvtx_sum " stats -r nvtx_s
expect "ms " stats --timeunit m
expect "max median min " stats --sort m
expect "--by-rank --engine --force-overwrite --format --help --limit --merge --name-width --output --partial --quiet --report --sort --timeunit --width -f -h -n -o -q -r -s -w " stats -
expect "model " stats --engine m
expect "--a --b --diff-json --force-overwrite --help --output --quiet --regress -h -o -q " report -
# after --, record completes a command, then that command's arguments
expect "echo " record -o x.json -- ech
cd "$(mktemp -d)" && touch x.json && trap 'rm -rf "$PWD"' EXIT
expect "x.json " record -- ech x.js
expect "x.json " stats x
expect "x.json " report x
expect "x.json " diff x
expect "x.json " diff --a x
expect "x.json " advise x
# every option a command's --help lists is offered, and nothing else
for cmd in record capture stats report diff advise; do
  want=$("$exe" "$cmd" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+=?' | grep -oE -- '--?[a-z-]+=?' | sort -u | tr '\n' ' ')
  got=$(complete_line "$cmd" -)
  for o in $want; do
    case " $got " in *" $o "*) ;; *) echo "FAIL: flagtrace $cmd - does not offer $o ($got)" >&2; fails=$((fails + 1)) ;; esac
  done
done
# the value lists are the ones the help texts name
"$exe" record --help | grep -q "kernel,memcpy,memset,runtime,driver,nvtx,sync" || { echo "FAIL: record's --trace list changed" >&2; fails=$((fails + 1)); }
# the help held in a variable: grep -q closing the pipe early would kill a long --help (pipefail)
stats_help=$("$exe" stats --help)
for r in kernels api memops memory memsize ranges gpu_ranges ops gpu ranks trace; do
  grep -qE "^ +$r  " <<<"$stats_help" || { echo "FAIL: stats --help no longer lists report '$r'" >&2; fails=$((fails + 1)); }
done
# every report the help lists is offered after a comma
got=$(complete_line stats --report kernels,)
for r in $(sed -n 's/^ \{24\}\([a-z][a-z0-9_]*\)  .*/\1/p' <<<"$stats_help"); do
  [ "$r" = kernels ] && continue
  case " $got " in *" kernels,$r "*) ;; *) echo "FAIL: stats --report kernels, does not offer $r" >&2; fails=$((fails + 1)) ;; esac
done
[ $fails -eq 0 ] || exit 1
echo "1 passed, 0 failed"
