#!/usr/bin/env bash
# overhead.sh [OPTIONS] -- rerun `prosper bench overhead` (supervisor slowdown vs native, stack
# bytes per checkpoint vs the exact minimum, restore GB/s) and write
# bench/results/overhead.{json,md}, or overhead_long.{json,md} for the long mode (--seconds S:
# programs lengthened to about S s natively).  OPTIONS go to the benchmark (--reps N, --quick,
# --programs a,b, --seconds S, --pool-dir DIR).  Needs a build (make build).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bench/results
name=overhead
for a in "$@"; do [ "$a" != --seconds ] || name=overhead_long; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
bin/prosper bench overhead --json --md "$tmp/overhead.md" "$@" >"$tmp/overhead.json" || rc=$?
# exit 1 = a program failed (reported in the results); anything else wrote no results
if [ "$rc" -le 1 ] && [ -s "$tmp/overhead.json" ]; then
	mv "$tmp/overhead.json" "$out/$name.json"
	mv "$tmp/overhead.md" "$out/$name.md"
	cat "$out/$name.md"
fi
exit "$rc"
