#!/usr/bin/env bash
# pool_bench.sh -- rerun the pool commit benchmark and keep its output in bench/results/.
# usage: bench/scripts/pool_bench.sh [--mib N] [--epochs N]
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s build >/dev/null
out=bench/results/pool_bench.json
{
  printf '{"command": "bench/scripts/pool_bench.sh %s", "date": "%s", "cpu": "%s", "kernel": "%s", "bench": ' \
    "$*" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(uname -r)"
  build/bench/pool_bench --json "$@"
  printf '}\n'
} > "$out.tmp"
mv "$out.tmp" "$out"
# The table is printed from the same run's JSON, not from a second run.
python3 - "$out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(j["command"], "|", j["cpu"], "|", j["date"])
print(f"{'granularity':11} {'pattern':7} {'dirty MiB/ep':>12} {'commit GB/s':>12} {'memcpy GB/s':>12} {'ratio':>6}")
for r in j["bench"]["results"]:
    print(f"{r['granularity']:11} {r['pattern']:7} {r['dirty_mib_per_epoch']:12.2f} {r['commit_gbs']:12.3f} "
          f"{r['memcpy_gbs']:12.3f} {r['ratio']:6.3f}")
print(f"a commit of 4 KiB in an 8 GiB pool of 64 KiB segments: {j['bench']['small_commit_us']:.2f} us")
PY
