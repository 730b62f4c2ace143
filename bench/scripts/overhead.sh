#!/usr/bin/env bash
# overhead.sh [OPTIONS] -- rerun `prosper bench overhead` (supervisor slowdown vs native, stack
# bytes per checkpoint vs the exact minimum, restore GB/s) and write
# bench/results/overhead.{json,md}, or overhead_long.{json,md} for the long mode (--seconds S:
# programs lengthened to about S s natively).  OPTIONS go to the benchmark (--reps N, --quick,
# --programs a,b, --seconds S, --pool-dir DIR).  Needs a build (make build).
set -euo pipefail
name=overhead
for a in "$@"; do [ "$a" != --seconds ] || name=overhead_long; done
exec "$(dirname "$0")/bench_results.sh" overhead "$name" "$@"
