#!/usr/bin/env bash
# Runs a build step with its output appended to LOG; on failure prints the log's tail and where the rest is.
#   scripts/quiet.sh LOG WHAT COMMAND...   (WHAT names the step in the failure line)
set -uo pipefail
log=$1 what=$2
shift 2
mkdir -p "$(dirname "$log")"
echo "\$ $*" >>"$log"
if "$@" >>"$log" 2>&1; then exit 0; else rc=$?; fi
tail -n "${QUIET_TAIL:-60}" "$log" >&2
echo "make: $what failed (exit $rc): its last lines above, the whole output in $log" >&2
exit "$rc"
