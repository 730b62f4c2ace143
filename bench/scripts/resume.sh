#!/usr/bin/env bash
# resume.sh [OPTIONS] -- rerun `prosper bench resume` (pr, sssp and kv killed at half time, the same
# checkpoint resumed with --restore lazy and eager in turn: how soon each runs again, the output
# checked) and write bench/results/resume.{json,md}.  OPTIONS go to the benchmark (--reps R,
# --programs a,b, --quick).  Needs a build (make build); takes about a minute.
set -euo pipefail
exec "$(dirname "$0")/bench_results.sh" resume resume "$@"
