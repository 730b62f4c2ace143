#!/usr/bin/env python3
"""metadata_modes.py [--ks 0,1,10,100,1000] [--n 1000] [--ticks 40] [--interval 50] [--reps 3] [--pool-dir DIR]

The cost of keeping each checkpoint's process metadata (registers, map, fds, files) as a redo
log of changes (`prosper run --metadata log`, Kindle's way) or rewritten whole (`rewrite`),
against the number of VMA changes per interval.  bench/vmachurn keeps N one-page mappings and
flips K of them between read-write and read-only every tick (one VMA change each); the tick
equals the checkpoint interval.  For every K and both modes it runs vmachurn under the
supervisor --reps times (round robin over all configurations, so load drifts hit all alike) and
prints, per checkpoint: metadata bytes persisted (rewrite: the blob;
log: stub + log header + records), log records, VMA changes the log saw, commit time (the whole
commit half: data, metadata, pool commit) and stop time -- times as the median over the
repetitions with their range, bytes and counts of the repetition that made the most checkpoints
(the least disturbed by other load).  Writes
bench/results/metadata_modes.{json,md}.  Not a test: numbers depend on the machine's load."""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PROSPER_BUILD", os.path.join(ROOT, "build"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--ks", default="0,1,10,100,1000")
    ap.add_argument("--n", type=int, default=1000, help="one-page mappings kept (default 1000)")
    ap.add_argument("--ticks", type=int, default=40, help="ticks of the program (default 40)")
    ap.add_argument("--interval", type=int, default=50, help="tick = checkpoint interval, ms (default 50)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of every configuration (default 3)")
    ap.add_argument("--pool-dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    a = ap.parse_args()
    ks = [int(k) for k in a.ks.split(",")]
    prog = os.path.join(BUILD, "bench", "vmachurn")
    if not os.access(prog, os.X_OK):
        sys.exit(f"metadata_modes: {prog} is not built")
    rows = []
    work = tempfile.mkdtemp(prefix="prosper-meta-", dir=a.pool_dir)
    native = subprocess.run([prog, "0", str(a.n), "1", "1"], capture_output=True, text=True, check=True)
    runs = {}
    for rep in range(a.reps):
        for k in ks:
            for mode in ("rewrite", "log"):
                pool, stats = os.path.join(work, f"{mode}-{k}.prosper"), os.path.join(work, f"{mode}-{k}.json")
                cmd = [os.path.join(ROOT, "bin", "prosper"), "run", "--max-overhead", "0", "--metadata", mode, "--interval", str(a.interval),
                       "--pool", pool, "--stats-json", stats, "--", prog, str(k), str(a.n), str(a.ticks),
                       str(a.interval)]
                r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PROSPER_BUILD=BUILD))
                os.unlink(pool)
                if r.returncode != 0:
                    sys.exit(f"metadata_modes: {' '.join(cmd)} failed: {r.stderr.strip()}")
                runs.setdefault((k, mode), []).append(json.load(open(stats)))
                print(f"rep {rep + 1}: K={k} {mode} done", file=sys.stderr)
    for k in ks:
        for mode in ("rewrite", "log"):
            sts = runs[(k, mode)]
            st = max(sts, key=lambda x: x["checkpoints"])  # the least disturbed repetition
            c = max(1, st["checkpoints"])
            commit = sorted(x["mean_commit_ms"] for x in sts)
            stop = sorted(x["mean_stop_ms"] for x in sts)
            rows.append({
                "k": k, "mode": mode, "checkpoints": st["checkpoints"], "late": st["late"],
                "metadata_bytes_per_ckpt": round(st["metadata_bytes"] / c, 1),
                "first_ckpt_metadata_bytes": st["metadata_first_bytes"],
                "later_metadata_bytes_per_ckpt": round((st["metadata_bytes"] - st["metadata_first_bytes"])
                                                       / max(1, st["checkpoints"] - 1), 1),
                "records_per_ckpt": round(st["metadata_records"] / c, 2),
                "vma_changes_per_ckpt": round(st["vma_changes"] / c, 2),
                "rebuilds": st["metadata_rebuilds"],
                "commit_ms": commit[len(commit) // 2], "commit_ms_range": [commit[0], commit[-1]],
                "stop_ms": stop[len(stop) // 2], "stop_ms_range": [stop[0], stop[-1]],
            })
    shutil.rmtree(work, ignore_errors=True)
    cmdline = "bench/scripts/metadata_modes.py " + " ".join(sys.argv[1:])
    res = {"benchmark": "metadata_modes", "command": cmdline.strip(),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "machine": {"nproc": os.cpu_count(), "kernel": os.uname().release, "pool_dir": a.pool_dir,
                       "loadavg_1min": os.getloadavg()[0]},
           "n_mappings": a.n, "reps": a.reps, "ticks": a.ticks, "interval_ms": a.interval, "native_checksum": native.stdout.strip(),
           "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "metadata_modes.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = [f"# Process metadata: redo log of changes vs rewritten whole",
          "",
          f"Produced by `{res['command']}` on {res['date']}; every number below was measured in that run.",
          f"{res['machine']['nproc']} CPUs, Linux {res['machine']['kernel']}, pools in {a.pool_dir}, "
          f"load average {res['machine']['loadavg_1min']:.1f}.  Program: `vmachurn K {a.n} {a.ticks} {a.interval}` "
          f"({a.n} one-page mappings, about {2 * a.n} VMAs in all; K of them flip read-write/read-only every "
          f"{a.interval} ms tick); checkpoint interval {a.interval} ms.",
          "",
          "Metadata bytes persisted (rewrite: the whole blob in the metadata slot; log: stub + 64-byte log header "
          "+ 16-byte record headers + payloads in the metadata region's redo log): at the first checkpoint (log: "
          "the region laid out whole) and per later checkpoint.  Per checkpoint, means over the run: log records, "
          "VMA changes the log saw (flips undone by a second tick before the next checkpoint are no change), "
          "commit ms (the whole commit half: memory, metadata, pool commit), stop ms (the program stopped), "
          f"both the median of {a.reps} repetitions with [min, max]; bytes and counts from the repetition "
          "with the most checkpoints. "
          "Both modes also rewrite the pool's own region table every commit (not counted in the bytes).",
          "",
          "| K | mode | ckpts | late | first ckpt B | later B/ckpt | records/ckpt | VMA changes/ckpt | rebuilds | commit ms | stop ms |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['k']} | {r['mode']} | {r['checkpoints']} | {r['late']} | {r['first_ckpt_metadata_bytes']} | "
                  f"{r['later_metadata_bytes_per_ckpt']:.0f} | "
                  f"{r['records_per_ckpt']:.1f} | {r['vma_changes_per_ckpt']:.1f} | {r['rebuilds']} | "
                  f"{r['commit_ms']:.2f} [{r['commit_ms_range'][0]:.2f}, {r['commit_ms_range'][1]:.2f}] | "
                  f"{r['stop_ms']:.2f} [{r['stop_ms_range'][0]:.2f}, {r['stop_ms_range'][1]:.2f}] |")
    with open(os.path.join(a.out, "metadata_modes.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
