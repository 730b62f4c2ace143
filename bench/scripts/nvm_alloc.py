#!/usr/bin/env python3
"""nvm_alloc.py [--sizes 4,16,64] [--rounds 100] [--sparse-segs 4] [--pool-dir DIR] [--out DIR] [--baseline BUILD]

What a checkpoint costs when N MiB of a program's memory is NVM-resident (prosper_nvm_alloc:
direct pool region, copy-on-write before the first write of a 64 KiB segment per interval, nothing
copied at the stop) against the same N MiB in DRAM (copied at the stop: the pages the page
tracker names, filtered by the 256-byte diff before the pool write).  tests/supervisor/nvmuser
writes 64 random words into 64 KiB pieces of its memory every round and sleeps 2 ms: `dense`
touches every piece each round, `sparse` the next SPARSE_SEGS pieces.  Each configuration runs
once under `prosper run` (interval 10 ms) and prints, per checkpoint: stop time (mean, max), bytes
copied out of the program at the stop, bytes copied by copy-on-write (NVM), bytes the commit made
durable, NVM write faults, segments opened ahead of a fault; and the wall time beside the native
run's and the DRAM run's.  --baseline BUILD also runs every NVM configuration with the supervisor
and program of another build directory (e.g. one of an earlier commit), right after the current
one, as rows of memory `nvm-baseline`: a before/after measured in the same run.  Writes
bench/results/nvm_alloc.{json,md}.  Not a test: the numbers depend on the machine's load."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PROSPER_BUILD", os.path.join(ROOT, "build"))


def die(msg, code=2):
    print(f"nvm_alloc: {msg}", file=sys.stderr)
    sys.exit(code)


def timed(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    return r, time.monotonic() - t0


def build_commit(build):
    """The commit a build directory was configured from (its CMake source tree), '+' if that tree
    has changes, or 'an unknown commit'."""
    try:
        src = next(l.split("=", 1)[1].strip() for l in open(os.path.join(build, "CMakeCache.txt"))
                   if l.startswith("CMAKE_HOME_DIRECTORY:"))
        rev = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True)
        if rev.returncode == 0:
            return f"commit {rev.stdout.strip()}" + ("+" if dirty.stdout.strip() else "")
    except (OSError, StopIteration):
        pass
    return "an unknown commit"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--sizes", default="4,16,64", help="MiB, comma-separated (default 4,16,64)")
    ap.add_argument("--rounds", type=int, default=100, help="rounds of the program (default 100)")
    ap.add_argument("--sparse-segs", type=int, default=4, help="64 KiB pieces per round, sparse pattern")
    ap.add_argument("--pool-dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--baseline", metavar="BUILD", help="also run the NVM rows with this build directory")
    a = ap.parse_args()
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        die("--sizes is a comma-separated list of MiB")
    if a.rounds < 1 or a.sparse_segs < 1 or any(s < 1 for s in sizes):
        die("sizes, --rounds and --sparse-segs must be positive")
    builds = {"current": BUILD}
    baseline_commit = None
    if a.baseline:
        builds["baseline"] = os.path.abspath(a.baseline)
        baseline_commit = build_commit(builds["baseline"])
    for b in builds.values():
        for p in (os.path.join(b, "tests", "supervisor", "nvmuser"), os.path.join(b, "src", "supervisor", "prosper-supervise")):
            if not os.access(p, os.X_OK):
                die(f"{p} is not built")
    prog = os.path.join(BUILD, "tests", "supervisor", "nvmuser")
    work = tempfile.mkdtemp(prefix="prosper-nvmbench-", dir=a.pool_dir)
    load_before = open("/proc/loadavg").read().split()[:3]
    rows = []
    for mib in sizes:
        for pattern, segs in (("dense", 0), ("sparse", a.sparse_segs)):
            args = [str(mib), str(a.rounds)] + ([str(segs)] if segs else [])
            native, native_s = timed([prog, "dram", *args])
            dram_wall = None
            for mode, build in [("dram", "current"), ("nvm", "current")] + [("nvm", b) for b in builds if b != "current"]:
                bprog = os.path.join(builds[build], "tests", "supervisor", "nvmuser")
                sup = os.path.join(builds[build], "src", "supervisor", "prosper-supervise")
                pool, stats = os.path.join(work, f"{mode}.prosper"), os.path.join(work, "stats.json")
                for f in (pool, stats):
                    if os.path.exists(f):
                        os.unlink(f)
                r, wall = timed([sup, "run", "--max-overhead", "0", "--pool", pool, "--stats-json", stats, "--", bprog, mode, *args])
                if r.returncode != 0 or r.stdout != native.stdout:
                    die(f"{mode} {' '.join(args)} ({build}) failed or differs from the native run: {r.stderr.strip()}", 1)
                st = json.load(open(stats))
                n = max(1, st["checkpoints"])
                if mode == "dram":
                    dram_wall = wall
                rows.append({
                    "mib": mib, "pattern": pattern, "memory": mode if build == "current" else f"{mode}-{build}",
                    "checkpoints": st["checkpoints"],
                    "late": st["late"], "mean_stop_ms": st["mean_stop_ms"], "max_stop_ms": st["max_stop_ms"],
                    "stop_copy_bytes_per_ckpt": (st["other_page_bytes"] + st["new_mapping_bytes"] + st["stack_page_bytes"]) / n,
                    "cow_bytes_per_ckpt": st["pool_cow_bytes"] / n,
                    "durable_bytes_per_ckpt": st["pool_data_bytes"] / n,
                    "nvm_faults_per_ckpt": st["nvm_faults"] / n,
                    # opened ahead of their own fault, in a batch (0 for builds without it)
                    "ahead_segs_per_ckpt": st.get("nvm_ahead_segments", 0) / n,
                    # everything the run cost beyond the native one, per fault: an upper bound of a
                    # fault's cost (it includes the stops and the commits)
                    "us_per_fault_bound": 1e6 * (wall - native_s) / st["nvm_faults"] if st["nvm_faults"] else None,
                    "wall_s": round(wall, 3), "native_s": round(native_s, 3),
                    "vs_dram": round(wall / dram_wall, 2),
                })
                print(json.dumps(rows[-1]), flush=True)
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    os.rmdir(work)
    # where the builds were is this machine's business; which commits they are is the record
    args = ["BUILD" if a.baseline and x == a.baseline else x for x in sys.argv[1:]]
    cmd = "bench/scripts/nvm_alloc.py " + " ".join(args)
    res = {"command": cmd.strip(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "cpus": os.cpu_count(), "kernel": os.uname().release, "load_before": load_before,
           "load_after": open("/proc/loadavg").read().split()[:3], "rounds": a.rounds,
           "sparse_segs": a.sparse_segs, "builds": {k: build_commit(v) for k, v in builds.items()}, "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "nvm_alloc.json"), "w") as f:
        json.dump(res, f, indent=1)
    mib = 1 << 20
    lines = [
        "# NVM-resident memory vs DRAM: cost per checkpoint",
        "",
        f"Produced by `{res['command']}` on {res['date']}. Every number below was measured in that run "
        f"(one run per row; {res['cpus']} CPUs, kernel {res['kernel']}, load average {' '.join(load_before)} at the start, "
        f"{' '.join(res['load_after'])} at the end; pools in /dev/shm, interval 10 ms).",
        "",
        f"tests/supervisor/nvmuser writes 64 random words into 64 KiB pieces of N MiB each round and sleeps 2 ms, "
        f"{a.rounds} rounds; dense = every piece each round, sparse = {a.sparse_segs} pieces per round. "
        "DRAM memory is copied out of the program at the stop (written pages, then filtered by the diff); "
        "NVM memory is copied by copy-on-write when a 64 KiB segment is first written in an interval "
        "(a SIGSEGV served by the supervisor), and the stop only write-protects it again. "
        "stop copy = bytes read out of the program while it was stopped; COW = bytes copied into backup slots; "
        "durable = bytes the commit wrote or flushed in the pool; us/fault (bound) = (wall - native) / NVM faults, "
        "everything the run cost beyond the native run charged to the faults (the stops and commits included); "
        "ahead = segments a fault opened besides its own (copy-on-write in one batch, src/supervisor/memory/nvm.c); "
        "x DRAM = wall time / the DRAM row's wall time of the same configuration."
        + (f" Rows `nvm-baseline` ran the supervisor and program of BUILD, a build of {baseline_commit}, "
           "right after the `nvm` row of the same configuration." if a.baseline else ""),
        "",
        "| MiB | pattern | memory | ckpts | late | stop ms mean | stop ms max | stop copy MiB/ckpt | COW MiB/ckpt | durable MiB/ckpt | NVM faults/ckpt | ahead/ckpt | us/fault (bound) | wall s | native s | x DRAM |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['mib']} | {r['pattern']} | {r['memory']} | {r['checkpoints']} | {r['late']} | "
                     f"{r['mean_stop_ms']:.2f} | {r['max_stop_ms']:.2f} | {r['stop_copy_bytes_per_ckpt'] / mib:.3f} | "
                     f"{r['cow_bytes_per_ckpt'] / mib:.3f} | {r['durable_bytes_per_ckpt'] / mib:.3f} | "
                     f"{r['nvm_faults_per_ckpt']:.1f} | {r['ahead_segs_per_ckpt']:.1f} | "
                     f"{'-' if r['us_per_fault_bound'] is None else format(r['us_per_fault_bound'], '.0f')} | "
                     f"{r['wall_s']:.2f} | {r['native_s']:.2f} | {r['vs_dram']:.2f} |")
    with open(os.path.join(a.out, "nvm_alloc.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
