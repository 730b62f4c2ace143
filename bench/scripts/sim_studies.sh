#!/usr/bin/env bash
# sim_studies.sh [--quick] [--only NAME,...] -- the paper's Figs 2, 3, 8, 9 through prosper-sim on
# traces of the micro-benchmarks and PR/SSSP/KV; writes bench/results/sim_studies.{json,md}.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py="$root/.venv/bin/python"; [ -x "$py" ] || py=python3
PROSPER_ROOT="$root" PYTHONPATH="$root/python" exec "$py" -m prosper.sim_studies "$@"
