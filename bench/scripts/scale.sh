#!/usr/bin/env bash
# scale.sh [OPTIONS] -- rerun `prosper bench scale` (programs of 0.5 to 8 GiB written all over at
# random: checkpoints per second, stops, slowdown, kill and resume checked against the native
# output) and write bench/results/scale.{json,md}.  OPTIONS go to the benchmark (--sizes MIB,...,
# --seconds S, --quick, --pool-dir DIR).  Needs a build (make build); takes several minutes.
set -euo pipefail
exec "$(dirname "$0")/bench_results.sh" scale scale "$@"
