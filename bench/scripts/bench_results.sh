#!/usr/bin/env bash
# bench_results.sh MODE NAME [OPTIONS] -- run `prosper bench MODE OPTIONS` and, if it wrote results
# (exit 0, or 1: a program failed and the results say which), keep them as
# bench/results/NAME.{json,md}.  Shared by overhead.sh, resume.sh and scale.sh.  Needs a build (make build).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=$1 name=$2
shift 2
out=bench/results
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
bin/prosper bench "$mode" --json --md "$tmp/$name.md" "$@" >"$tmp/$name.json" || rc=$?
# exit 1 = a program failed (reported in the results); anything else wrote no results
if [ "$rc" -le 1 ] && [ -s "$tmp/$name.json" ]; then
	mv "$tmp/$name.json" "$out/$name.json"
	mv "$tmp/$name.md" "$out/$name.md"
	cat "$out/$name.md"
fi
exit "$rc"
