#!/usr/bin/env python3
"""dmtcp_compare.py -- prosper beside DMTCP on the same programs, in one run: each program natively,
under `prosper run` at the fixed 10 ms cadence and under overhead budgets, and under DMTCP's
`dmtcp_launch -i SECONDS --no-gzip`, interleaved over the repetitions.  Reported: the slowdown
(median over the repetitions of the paired ratio, supervised wall / the same repetition's native
wall) and the checkpoints each took (prosper: its statistics; DMTCP: the images it wrote, one
folder each with --enable-unique-checkpoint-filenames).  Every run must print what the native
run printed.

DMTCP is not a dependency of the project: build it yourself (its sources, `./configure
--prefix=DIR && make && make install`) and give --dmtcp DIR.  Both write their checkpoints into
--pool-dir (default /dev/shm).

Writes bench/results/NAME.{json,md} (NAME: --name, default dmtcp).  Needs a build (make build).
"""
import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from prosper import cmd_bench as cb  # noqa: E402

BUDGETS = "0,5,10"  # --max-overhead of the prosper runs (--budgets): 0 is the fixed cadence


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_dmtcp(dmtcp, argv, ckptdir, interval_s, expect):
    """The wall time of argv under dmtcp_launch (its own coordinator) and the checkpoints it wrote."""
    os.makedirs(ckptdir)
    cmd = [os.path.join(dmtcp, "bin", "dmtcp_launch"), "--new-coordinator", "--coord-port", "0", "-i", str(interval_s),
           "--no-gzip", "--ckptdir", ckptdir, "--enable-unique-checkpoint-filenames", *argv]
    try:
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ckptdir)
        wall = time.monotonic() - t0
        if r.returncode != 0:
            raise cb.BenchError(f"dmtcp_launch exited {r.returncode}: {r.stderr.strip()[-300:]}")
        if r.stdout != expect:
            raise cb.BenchError(f"under DMTCP it printed {r.stdout.strip()[-200:]!r}, natively {expect.strip()[-200:]!r}")
        images = sum(1 for d, _, files in os.walk(ckptdir) for f in files if f.endswith(".dmtcp"))
        return wall, images
    finally:
        shutil.rmtree(ckptdir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dmtcp", required=True, help="DMTCP's install prefix (DIR/bin/dmtcp_launch)")
    ap.add_argument("--programs", default="kv", help="of prosper bench overhead's programs (default kv)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0, help="native length of each program (default 5)")
    ap.add_argument("--dmtcp-interval", type=int, default=1, help="DMTCP's -i, seconds (default 1)")
    ap.add_argument("--pool-dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    ap.add_argument("--budgets", default=BUDGETS,
                    help=f"the --max-overhead values prosper runs at, comma-separated (default {BUDGETS}; 0: every 10 ms)")
    ap.add_argument("--name", default="dmtcp")
    args = ap.parse_args()
    launch = os.path.join(args.dmtcp, "bin", "dmtcp_launch")
    if not os.access(launch, os.X_OK):
        print(f"dmtcp_compare: no {launch}: build DMTCP and give its install prefix with --dmtcp", file=sys.stderr)
        return 2
    pool_dir = args.pool_dir or tempfile.gettempdir()
    mach = cb.machine(pool_dir)
    mach["pool_dir"] = pool_dir
    version = subprocess.run([launch, "--version"], capture_output=True, text=True).stdout.split("\n")[0].strip()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    names = args.programs.split(",")
    argvs = {}
    for n in names:
        rel, _ = cb.PROGRAMS[n]
        argvs[n] = cb.lengthened(n, [os.path.join(cb.BUILD, "bench", rel[0])] + rel[1:], args.seconds)
        log(f"{n}: {' '.join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argvs[n]))}")
    budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
    if not budgets or any(not b.replace(".", "", 1).isdigit() for b in budgets):
        ap.error("--budgets: comma-separated percentages, e.g. 0,3,5")
    configs = [f"prosper-{b}" for b in budgets] + ["dmtcp"]
    runs = {n: {"native": [], **{c: [] for c in configs}} for n in names}
    expect, failures = {}, []
    tmp = tempfile.mkdtemp(prefix="prosper-dmtcp-", dir=pool_dir)
    try:
        for rep in range(args.reps):
            for n in names:
                try:
                    wall = cb.run_native_again(argvs[n], expect, n)
                    runs[n]["native"].append(wall)
                    for b in budgets:
                        w, st = cb.run_supervised(argvs[n], tmp, f"{n}-{b}", "diff", expect[n], ["--max-overhead", str(b)])
                        runs[n][f"prosper-{b}"].append({"wall": w, "ratio": w / wall, "checkpoints": st["checkpoints"],
                                                        "interval_mean_ms": st["interval_mean_ms"]})
                    w, images = run_dmtcp(args.dmtcp, argvs[n], os.path.join(tmp, f"{n}-dmtcp"), args.dmtcp_interval,
                                          expect[n])
                    runs[n]["dmtcp"].append({"wall": w, "ratio": w / wall, "checkpoints": images,
                                             "interval_mean_ms": 1e3 * w / images if images else None})
                    log(f"rep {rep + 1} {n}: native {wall:.3f} s, " + ", ".join(
                        f"{c} {runs[n][c][-1]['ratio']:.3f}x ({runs[n][c][-1]['checkpoints']} ckpts)" for c in configs))
                except cb.BenchError as e:
                    failures.append(f"{n}: {e}")
                    log(f"rep {rep + 1} {n}: FAILED: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cb.machine_end(mach)
    rows = []
    for n in names:
        r = runs[n]
        if not r["native"] or any(not r[c] for c in configs):
            continue
        row = {"program": n, "argv": [os.path.basename(argvs[n][0])] + argvs[n][1:],
               "native_s": statistics.median(r["native"])}
        for c in configs:
            row[c] = {"ratio": statistics.median(x["ratio"] for x in r[c]), "ratios": [x["ratio"] for x in r[c]],
                      "checkpoints": statistics.median(x["checkpoints"] for x in r[c]),
                      "checkpoints_per_s": statistics.median(x["checkpoints"] / x["wall"] for x in r[c])}
        rows.append(row)
    res = {"benchmark": "dmtcp", "started": started, "reps": args.reps, "seconds": args.seconds,
           "command": "bench/scripts/dmtcp_compare.py " + " ".join(sys.argv[1:]), "machine": mach,
           "dmtcp_version": version, "dmtcp_interval_s": args.dmtcp_interval, "rows": rows, "failures": failures}
    md = [f"# prosper beside DMTCP ({version}, -i {args.dmtcp_interval} --no-gzip)", "",
          f"Produced by `{res['command']}` (started {started}). Every number below was measured in that run.", "",
          f"{mach['nproc']} CPUs, Linux {mach['kernel']}; checkpoints of both in {pool_dir} ({mach['pool_fs']}); "
          f"{args.reps} repetitions, interleaved (native, prosper at each budget, DMTCP); load average "
          f"{mach['loadavg_1min_start']:.1f} at the start, {mach['loadavg_1min_end']:.1f} at the end.", "",
          "x = median over the repetitions of (wall / the same repetition's native wall); ckpts/s = checkpoints taken "
          "per second of the run (median). prosper-P = `prosper run --max-overhead P` (0: every 10 ms).", "",
          "| program | native s | " + " | ".join(f"{c} x | {c} ckpts/s" for c in configs) + " |",
          "|---|---|" + "---|---|" * len(configs)]
    for r in rows:
        md.append(f"| {r['program']} ({' '.join(r['argv'][1:])}) | {r['native_s']:.3f} | " + " | ".join(
            f"{r[c]['ratio']:.3f} | {r[c]['checkpoints_per_s']:.1f}" for c in configs) + " |")
    return cb.write_results(args.name, res, md)


if __name__ == "__main__":
    sys.exit(main())
