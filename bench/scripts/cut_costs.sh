#!/usr/bin/env bash
# cut_costs.sh -- rerun bench/cut_costs (what the kernel charges per page for each way a cut could
# treat written memory; docs/run-resume.md) and keep its output in bench/results/cut_costs.{json,md}.
# usage: bench/scripts/cut_costs.sh [REPS [MiB...]]   (default 5; 32 256 1024)
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s build >/dev/null
out=bench/results/cut_costs
load0=$(cut -d' ' -f1 /proc/loadavg)
run=$(build/bench/cut_costs "$@")
load1=$(cut -d' ' -f1 /proc/loadavg)
printf '{"command": "bench/scripts/cut_costs.sh %s", "date": "%s", "cpus": %s, "kernel": "%s", "load_start": %s, "load_end": %s, "bench": %s}\n' \
  "$*" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" "$(uname -r)" "$load0" "$load1" "$run" > "$out.json.tmp"
mv "$out.json.tmp" "$out.json"
# The table is printed from the same run's JSON, not from a second run.
python3 - "$out.json" > "$out.md.tmp" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
b = j["bench"]
print("# What a cut costs the kernel, per page\n")
print(f"Produced by `{j['command'].strip()}` on {j['date']}. Every number below was measured in that run "
      f"(medians of {b['reps']}).\n")
print(f"{j['cpus']} CPUs, Linux {j['kernel']}; load average {j['load_start']} at the start, {j['load_end']} at the end.\n")
print("A private anonymous mapping written whole (4 KiB pages). Re-protect: `UFFDIO_WRITEPROTECT` of it on the "
      "tracker's asynchronous userfaultfd (what a cut pays today for the pages written); first write: the program's first write to each page after it, a fault the kernel resolves (what tracking costs the program). Switch: the mapping moved "
      "to a synchronous userfaultfd and write-protected there (unregister, register, write-protect), what holding "
      "writes until their page is copied would cost a cut; back: the same the other way. Read: `process_vm_readv` "
      "of the whole mapping by one thread, and by two each reading half; every other page: the same for every other page, one pair of iovecs per page, 1024 per call (as a stop reads pages written here and there), GB/s of the pages read. Fork: `fork()` of the process holding it and the read's buffer, as large.\n")
print("| MiB | re-protect ns/page | first write after it ns/page | switch ns/page | back ns/page | read GB/s, 1 thread | read GB/s, 2 threads | every other page, 1 thread | every other page, 2 threads | fork ms |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s in b["sizes"]:
    print(f"| {s['mib']} | {s['reprotect_ns_per_page']:.0f} | {s['first_write_ns_per_page']:.0f} | {s['switch_ns_per_page']:.0f} | {s['switch_back_ns_per_page']:.0f} "
          f"| {s['read_gbps_1']:.2f} | {s['read_gbps_2']:.2f} | {s['read_scattered_gbps_1']:.2f} | {s['read_scattered_gbps_2']:.2f} | {s['fork_ms']:.1f} |")
print(f"\nA write to a page write-protected on a synchronous userfaultfd, answered by a thread that copies the page "
      f"and lifts the protection: {b['fault_round_trip_ns'] / 1000:.1f} us from the write to its return (median).  "
      f"Soft-dirty bits kept by the kernel (the other tracker that could sit beside a synchronous userfaultfd): "
      f"{'yes' if b['soft_dirty'] else 'no (CONFIG_MEM_SOFT_DIRTY is off)'}.")
PY
mv "$out.md.tmp" "$out.md"
cat "$out.md"
