#!/usr/bin/env python3
"""A 4-process pipeline beside one process doing the same total work, native and under
`prosper run` at 10 ms: slowdown, checkpoints, stop times.  Writes bench/results/pipeline_tree.{json,md}.

    bench/scripts/pipeline_tree.py [--lines N] [--reps R] [--pool-dir DIR]

The work: N lines, each passing four stages of the same arithmetic (a generator, two filters, a
summer).  `pipeline` runs each stage as its own process (`sh -c 'gen | mid | mid | last'`, five
processes with the shell); `single` runs the four stages in one loop in one process.  Both print
the same final line, checked here.  Every run is repeated R times, native and supervised
interleaved; the table shows medians and, for native, the spread (max/min) so that a slowdown
can be read against the machine's noise.  A pipeline on 2 CPUs finishes sooner than the single
process: compare each with its own native run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROSPER = os.path.join(ROOT, "bin", "prosper")

STAGE = """import sys
W = %d
def work(x):
    for i in range(W):
        x = (x * 1103515245 + 12345 + i) & 0x7FFFFFFF
    return x
role, n = sys.argv[1], int(sys.argv[2])
out = sys.stdout
if role == "gen":
    for i in range(n):
        out.write("%%d\\n" %% work(i))
elif role == "mid":
    for line in sys.stdin:
        out.write("%%d\\n" %% work(int(line)))
elif role == "last":
    total = 0
    for line in sys.stdin:
        total = (total + work(int(line))) %% 1000000007
    out.write("sum %%d\\n" %% total)
else:
    total = 0
    for i in range(n):
        total = (total + work(work(work(work(i))))) %% 1000000007
    out.write("sum %%d\\n" %% total)
"""


def programs(d, lines, per_line):
    stage = os.path.join(d, "stage.py")
    with open(stage, "w") as f:
        f.write(STAGE % per_line)
    py = "/usr/bin/python3 -S " + stage
    return {
        "pipeline": ["/bin/sh", "-c", f"{py} gen {lines} | {py} mid 0 | {py} mid 0 | {py} last 0"],
        "single": ["/usr/bin/python3", "-S", stage, "all", str(lines)],
    }


def timed(argv, cwd):
    t = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    return time.monotonic() - t, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200000, help="lines through the stages (default 200000: about 5 s natively in one process)")
    ap.add_argument("--per-line", type=int, default=60, help="arithmetic steps per line and stage (default 60)")
    ap.add_argument("--reps", type=int, default=3, help="runs of each, native and supervised interleaved (default 3)")
    ap.add_argument("--pool-dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where the pool lives (default /dev/shm)")
    ap.add_argument("--no-write", action="store_true", help="print only; bench/results is left as it is")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="prosper-pipeline-") as d:
        pool_dir = args.pool_dir or d
        for name, argv in programs(d, args.lines, args.per_line).items():
            native, sup, stats, outs = [], [], [], set()
            for rep in range(args.reps):
                t, r = timed(argv, d)
                if r.returncode:
                    sys.exit(f"{name}: native run failed: {r.stderr.strip()[-200:]}")
                native.append(t)
                outs.add(r.stdout)
                pool, sj = os.path.join(pool_dir, f"bench-{name}.prosper"), os.path.join(d, "stats.json")
                t, r = timed([PROSPER, "run", "--max-overhead", "0", "--fresh", "--pool", pool, "--stats-json", sj, "--", *argv], d)
                if r.returncode:
                    sys.exit(f"{name}: prosper run failed: {r.stderr.strip()[-300:]}")
                sup.append(t)
                outs.add(r.stdout)
                with open(sj) as f:
                    stats.append(json.load(f))
                os.unlink(pool)
            if len(outs) != 1:
                sys.exit(f"{name}: the runs printed different results: {sorted(outs)}")
            med = statistics.median
            row = {
                "program": name, "argv": [a.replace(d, "$WORK") for a in argv], "result": outs.pop().strip(),
                "native_s": round(med(native), 3), "native_spread": round(max(native) / min(native), 3),
                "prosper_s": round(med(sup), 3), "slowdown": round(med(sup) / med(native), 3),
                "checkpoints": med([s["checkpoints"] for s in stats]),
                "checkpoints_per_s": round(med([s["checkpoints"] / t for s, t in zip(stats, sup)]), 1),
                "tree_checkpoints": med([s["tree_checkpoints"] for s in stats]),
                "max_processes": max(s["max_processes"] for s in stats),
                "late": med([s["late"] for s in stats]),
                "mean_stop_ms": round(med([s["mean_stop_ms"] for s in stats]), 2),
                "max_stop_ms": round(max(s["max_stop_ms"] for s in stats), 2),
                "mean_commit_ms": round(med([s["mean_commit_ms"] for s in stats]), 2),
                "new_mapping_bytes": med([s["new_mapping_bytes"] for s in stats]),
                "pipe_bytes_in_flight": max(s["pipe_bytes_in_flight"] for s in stats),
                "load": round(os.getloadavg()[0], 2),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.no_write:
        return 0
    out = os.path.join(ROOT, "bench", "results", "pipeline_tree")
    with open(out + ".json", "w") as f:
        json.dump({"lines": args.lines, "per_line": args.per_line, "reps": args.reps, "cpus": os.cpu_count(),
                   "pool_dir": "/dev/shm" if pool_dir == "/dev/shm" else "given", "rows": rows}, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write(f"# A 4-process pipeline beside one process of the same work (bench/scripts/pipeline_tree.py)\n\n"
                f"{args.lines} lines x 4 stages x {args.per_line} steps; medians of {args.reps} runs, native and "
                f"`prosper run` (10 ms) interleaved; {os.cpu_count()} CPUs; pool in "
                f"{'/dev/shm' if pool_dir == '/dev/shm' else 'the --pool-dir given'}; load average at each row's end.\n\n"
                "| program | processes | native s (spread) | prosper s | slowdown | checkpoints (/s) | tree cuts | late "
                "| mean stop ms | max stop ms | mean commit ms | first-copy MiB | pipe bytes at a cut | load |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        for r in rows:
            f.write(f"| {r['program']} | {r['max_processes']} | {r['native_s']} ({r['native_spread']}x) | {r['prosper_s']} | "
                    f"{r['slowdown']}x | {r['checkpoints']} ({r['checkpoints_per_s']}) | {r['tree_checkpoints']} | {r['late']} | "
                    f"{r['mean_stop_ms']} | {r['max_stop_ms']} | {r['mean_commit_ms']} | "
                    f"{r['new_mapping_bytes'] / 2**20:.1f} | {r['pipe_bytes_in_flight']} | {r['load']} |\n")
        f.write("\nfirst-copy MiB: bytes copied whole at the first checkpoint of each new process or mapping "
                "(docs/limitations.md).\n")
    print("wrote", out + ".md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
