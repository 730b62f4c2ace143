#!/usr/bin/env bash
# scale.sh [OPTIONS] -- rerun `prosper bench scale` (programs of 0.5 to 8 GiB written all over at
# random: checkpoints per second, stops, slowdown, kill and resume checked against the native
# output) and write bench/results/scale.{json,md}.  OPTIONS go to the benchmark (--sizes MIB,...,
# --seconds S, --quick, --pool-dir DIR).  Needs a build (make build); takes several minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bench/results
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
bin/prosper bench scale --json --md "$tmp/scale.md" "$@" >"$tmp/scale.json" || rc=$?
# exit 1 = a size failed (reported in the results); anything else wrote no results
if [ "$rc" -le 1 ] && [ -s "$tmp/scale.json" ]; then
	mv "$tmp/scale.json" "$out/scale.json"
	mv "$tmp/scale.md" "$out/scale.md"
	cat "$out/scale.md"
fi
exit "$rc"
