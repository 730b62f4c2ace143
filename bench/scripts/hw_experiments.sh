#!/usr/bin/env bash
# hw_experiments.sh [--quick] -- rerun the tracker experiments (Figs 2, 10, 11, 13) and write
# bench/results/hw_experiments.{json,md}.  See python/prosper/hw_experiments.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s build >/dev/null
PROSPER_ROOT=$PWD PYTHONPATH=$PWD/python exec .venv/bin/python -m prosper.hw_experiments "$@"
