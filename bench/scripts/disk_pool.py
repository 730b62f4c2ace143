#!/usr/bin/env python3
"""A pool on the project's own file system (a disk) beside a pool in /dev/shm, same session:
checkpoints per second, slowdown against native, the bytes each checkpoint sends to the disk and
the device flush latency, at --durable-every 1 s, 100 ms and 0 (every checkpoint durable).
Writes bench/results/disk_pool.{json,md}.

    bench/scripts/disk_pool.py [--reps R] [--quick] [--programs a,b] [--disk-dir DIR] [--seconds S]

--seconds S lengthens every program by the count of its work (the micro-benchmarks' rounds, kv's
operations, pr's iterations, sssp's sources; the graph stays) so that its native run takes about
S seconds.  A one-second program makes a 10 % wall-time target smaller than the machine's noise.

Every program (the bench programs of `prosper bench overhead`) runs R times in each of five
configurations, one of each per repetition in an order rotated between repetitions, so that the
machine's drift hits all alike: native;
`shm` (pool in /dev/shm: every checkpoint survives the program, none a power cut); `disk 1s` and
`disk 100ms` (two tiers: a fast pool in memory, copied into the pool on the disk every 1 s /
100 ms); `disk 0` (one pool on the disk, every checkpoint durable).  Medians are shown; a ratio
to shm is the median of the ratios within each repetition (paired), with their range; native shows
its spread (max/min) so a slowdown can be read against the noise.  Every supervised run
must print the native output, or the script fails.

Targets (docs/durability.md): at 1 s, disk checkpoints >= 0.9x and wall time <= 1.1x those of
/dev/shm for every program; at 0, the quicksort-class programs keep >= 80 checkpoints/s.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from prosper.cmd_bench import PROGRAMS, fs_type, lengthened  # noqa: E402  (the one program table)

BUILD = os.environ.get("PROSPER_BUILD", os.path.join(ROOT, "build"))
SUPERVISOR = os.path.join(BUILD, "src", "supervisor", "prosper-supervise")
CONFIGS = [("shm", None), ("disk 1s", "1s"), ("disk 100ms", "100ms"), ("disk 0", "0")]
QUICKSORT_CLASS = ("random", "stream", "sparse", "quicksort", "recursive-4", "normal", "poisson")
DEFAULT_PROGRAMS = list(QUICKSORT_CLASS) + ["pr", "sssp", "kv"]


def run_native(argv):
    t0 = time.monotonic()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"disk_pool: native {argv[0]} exited {r.returncode}")
    return time.monotonic() - t0, r.stdout


def run_supervised(argv, pool_dir, every, expect, fast_dir):
    pool = os.path.join(pool_dir, "bench.prosper")
    stats = os.path.join(pool_dir, "stats.json")
    extra = ["--durable-every", every] if every is not None else []
    env = dict(os.environ, PROSPER_FAST_DIR=fast_dir)
    t0 = time.monotonic()
    r = subprocess.run([SUPERVISOR, "run", "--max-overhead", "0", "--fresh", "--pool", pool, "--stats-json", stats, *extra, "--", *argv],
                       stdin=subprocess.DEVNULL, capture_output=True, env=env)
    wall = time.monotonic() - t0
    if r.returncode != 0 or r.stdout != expect:
        sys.exit(f"disk_pool: supervised {argv[0]} ({every}) exited {r.returncode} or printed other output: "
                 f"{r.stderr.decode(errors='replace')[-400:]}")
    with open(stats) as f:
        st = json.load(f)
    for n in os.listdir(pool_dir):
        os.unlink(os.path.join(pool_dir, n))
    left = [n for d, _, ns in os.walk(fast_dir) for n in ns]
    if left:
        sys.exit(f"disk_pool: a fast pool was left behind: {left}")
    ck = max(1, st["checkpoints"])
    disk_bytes = (st["durable_copy_bytes"] if st["tier"] == "two"
                  else st["pool_data_bytes"] + st["pool_catchup_bytes"] if st["tier"] == "disk" else 0)
    return {"wall": wall, "checkpoints": st["checkpoints"], "ckpt_per_s": st["checkpoints"] / wall,
            "late": st["late"], "max_stop_ms": st["max_stop_ms"], "mean_commit_ms": st["mean_commit_ms"],
            "tier": st["tier"], "disk_bytes_per_ckpt": disk_bytes / ck, "durable_copies": st["durable_copies"],
            "durable_copy_mean_ms": st["durable_copy_mean_ms"], "durable_copy_max_ms": st["durable_copy_max_ms"],
            "durable_stage_max_ms": st["durable_stage_max_ms"],
            "fdatasyncs": st["fdatasyncs"], "fdatasync_mean_ms": st["fdatasync_mean_ms"]}


def where(path):
    """A directory as the results name it: relative to the project when inside it, so that a
    results file says nothing of the machine it was made on."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(ROOT))
    return path if rel.startswith("..") else f"<project>/{rel}"


def median(rows, key):
    return statistics.median(r[key] for r in rows)


def measure(name, reps, dirs, fast_dir, seconds=None):
    argv = [os.path.join(BUILD, "bench", PROGRAMS[name][0][0]), *PROGRAMS[name][0][1:]]
    native, runs = [], {c: [] for c, _ in CONFIGS}
    if seconds:
        argv = lengthened(name, argv, seconds)
    expect = run_native(argv)[1]
    for rep in range(reps):
        # every configuration once per repetition, in an order rotated from one repetition to the
        # next: a ratio of two runs of the same repetition sees the same state of the machine
        native.append(run_native(argv)[0])
        for c, every in CONFIGS[rep % len(CONFIGS):] + CONFIGS[:rep % len(CONFIGS)]:
            runs[c].append(run_supervised(argv, dirs[c], every, expect, fast_dir))
    out = {"argv": [os.path.basename(argv[0]), *argv[1:]], "native_s": statistics.median(native),
           "native_spread": max(native) / min(native), "configs": {}}
    for c, _ in CONFIGS:
        rows = runs[c]
        m = {k: median(rows, k) for k in rows[0] if k != "tier"}
        m["tier"] = rows[0]["tier"]
        m["slowdown"] = m["wall"] / out["native_s"]
        out["configs"][c] = m
    for c in ("disk 1s", "disk 100ms", "disk 0"):
        d = out["configs"][c]
        # paired: the ratio within each repetition, then their median and range
        pairs = list(zip(runs[c], runs["shm"]))
        ck = [a["ckpt_per_s"] / b["ckpt_per_s"] for a, b in pairs if b["ckpt_per_s"]]
        wall = [a["wall"] / b["wall"] for a, b in pairs]
        d["ckpt_vs_shm"] = statistics.median(ck) if ck else None
        d["ckpt_vs_shm_range"] = [min(ck), max(ck)] if ck else None
        d["wall_vs_shm"] = statistics.median(wall)
        d["wall_vs_shm_range"] = [min(wall), max(wall)]
    one = out["configs"]["disk 1s"]
    out["targets"] = {"1s_ckpt_vs_shm>=0.9": one["ckpt_vs_shm"] is not None and one["ckpt_vs_shm"] >= 0.9,
                      "1s_wall_vs_shm<=1.1": one["wall_vs_shm"] <= 1.1}
    if name in QUICKSORT_CLASS:
        out["targets"]["0_ckpt_per_s>=80"] = out["configs"]["disk 0"]["ckpt_per_s"] >= 80
    return out


def markdown(res):
    m = res["machine"]
    lines = [
        "# A pool on a disk vs /dev/shm (bench/scripts/disk_pool.py)", "",
        f"Measured {res['date']} on {m['nproc']} CPUs, kernel {m['kernel']}; disk pools in `{m['disk_dir']}` "
        f"({m['disk_fs']}), memory pools and fast pools in /dev/shm (tmpfs); load average "
        f"{m['loadavg_start']:.2f} at the start, {m['loadavg_end']:.2f} at the end; {res['reps']} repetitions, "
        "each running every configuration once in a rotated order; medians; a ratio to shm is the median of the "
        "ratios within each repetition, with their range; "
        + (f"counted programs lengthened to about {res['seconds']:g} s native (argv in the JSON). "
           if res.get("seconds") else "default program sizes. ") + "  `disk 1s`/`disk 100ms`: two tiers (fast pool in memory, copied into the disk "
        "pool at that period); `disk 0`: one pool on the disk, every checkpoint durable.", "",
        "## Checkpoints per second and slowdown", "",
        "| program | native s (spread) | shm ckpt/s | shm slowdown | disk 1s ckpt/s (vs shm) | disk 1s wall vs shm "
        "| disk 100ms ckpt/s (vs shm) | disk 0 ckpt/s (vs shm) | disk 0 wall vs shm |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res["programs"].items():
        c = r["configs"]
        lines.append(
            f"| {name} | {r['native_s']:.2f} ({r['native_spread']:.2f}x) | {c['shm']['ckpt_per_s']:.0f} | "
            f"{c['shm']['slowdown']:.2f}x | {c['disk 1s']['ckpt_per_s']:.0f} ({c['disk 1s']['ckpt_vs_shm']:.2f}x) | "
            f"{c['disk 1s']['wall_vs_shm']:.2f}x ({c['disk 1s']['wall_vs_shm_range'][0]:.2f}-"
            f"{c['disk 1s']['wall_vs_shm_range'][1]:.2f}) | {c['disk 100ms']['ckpt_per_s']:.0f} "
            f"({c['disk 100ms']['ckpt_vs_shm']:.2f}x) | {c['disk 0']['ckpt_per_s']:.0f} "
            f"({c['disk 0']['ckpt_vs_shm']:.2f}x) | {c['disk 0']['wall_vs_shm']:.2f}x ({c['disk 0']['wall_vs_shm_range'][0]:.2f}-"
            f"{c['disk 0']['wall_vs_shm_range'][1]:.2f}) |")
    lines += ["", "## What reaches the disk", "",
              "Bytes per checkpoint: what the durable pool was sent, over all checkpoints of the run (two tiers: "
              "the copies' changed blocks; disk 0: the checkpoint's data and caught-up blocks).  Copy: one durable "
              "copy from the start of its stage to the end of its commit; stage: the part on the commit thread "
              "(the commit itself runs on a thread of its own).  fdatasync: the device flush of one ordering "
              "point.", "",
              "| program | disk 1s: KiB/ckpt, copies, copy ms mean / max, stage ms max | disk 100ms: KiB/ckpt, copy ms "
              "mean / max, stage ms max | disk 0: KiB/ckpt, commit ms, fdatasync ms | shm commit ms |",
              "|---|---|---|---|---|"]
    for name, r in res["programs"].items():
        c = r["configs"]
        a, b, z = c["disk 1s"], c["disk 100ms"], c["disk 0"]
        lines.append(
            f"| {name} | {a['disk_bytes_per_ckpt'] / 1024:.0f}, {a['durable_copies']:.0f}, "
            f"{a['durable_copy_mean_ms']:.1f} / {a['durable_copy_max_ms']:.1f}, {a['durable_stage_max_ms']:.1f} | "
            f"{b['disk_bytes_per_ckpt'] / 1024:.0f}, {b['durable_copy_mean_ms']:.1f} / {b['durable_copy_max_ms']:.1f}, "
            f"{b['durable_stage_max_ms']:.1f} | {z['disk_bytes_per_ckpt'] / 1024:.0f}, "
            f"{z['mean_commit_ms']:.1f}, {z['fdatasync_mean_ms']:.2f} | {c['shm']['mean_commit_ms']:.1f} |")
    lines += ["", "## Targets", ""]
    for name, r in res["programs"].items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in r["targets"].items()))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repetition, three programs")
    ap.add_argument("--programs", default=None, help="comma-separated subset of: " + ", ".join(DEFAULT_PROGRAMS))
    ap.add_argument("--disk-dir", default=os.path.join(ROOT, "bench"),
                    help="a directory on the disk to measure (default: the project's own file system)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"), help="where disk_pool.{json,md} go")
    ap.add_argument("--seconds", type=float, default=None,
                    help="lengthen the counted programs to about this many native seconds")
    a = ap.parse_args()
    names = a.programs.split(",") if a.programs else (["quicksort", "pr", "kv"] if a.quick else DEFAULT_PROGRAMS)
    bad = [n for n in names if n not in PROGRAMS]
    if bad:
        sys.exit(f"disk_pool: unknown program {bad} (choose from {', '.join(DEFAULT_PROGRAMS)})")
    reps = 1 if a.quick else a.reps
    if not os.access(SUPERVISOR, os.X_OK):
        sys.exit("disk_pool: build first (make build)")
    disk = tempfile.mkdtemp(prefix=".disk-pool-bench-", dir=a.disk_dir)
    shm = tempfile.mkdtemp(prefix="disk-pool-bench-", dir="/dev/shm")
    fast = tempfile.mkdtemp(prefix="disk-pool-bench-fast-", dir="/dev/shm")
    dirs = {"shm": shm, "disk 1s": disk, "disk 100ms": disk, "disk 0": disk}
    if fs_type(disk) in ("tmpfs", "ramfs"):
        sys.exit(f"disk_pool: {a.disk_dir} is not on a disk ({fs_type(disk)})")
    res = {"date": time.strftime("%Y-%m-%d %H:%M"), "reps": reps, "seconds": a.seconds, "programs": {},
           "machine": {"nproc": os.cpu_count(), "kernel": platform.release(), "disk_dir": where(a.disk_dir),
                       "disk_fs": fs_type(disk), "loadavg_start": os.getloadavg()[0]}}
    try:
        for n in names:
            res["programs"][n] = measure(n, reps, dirs, fast, a.seconds)
            c = res["programs"][n]["configs"]
            print(f"{n}: shm {c['shm']['ckpt_per_s']:.0f}/s, disk 1s {c['disk 1s']['ckpt_per_s']:.0f}/s, "
                  f"disk 0 {c['disk 0']['ckpt_per_s']:.0f}/s", file=sys.stderr)
    finally:
        for d in (disk, shm, fast):
            shutil.rmtree(d, ignore_errors=True)
    res["machine"]["loadavg_end"] = os.getloadavg()[0]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "disk_pool.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(a.out, "disk_pool.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
