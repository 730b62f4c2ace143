#!/usr/bin/env python3
"""dense_large.py -- a dense writer larger than bench/scripts/budget.py's (4 GiB by default) under
the default overhead budget (docs/run-resume.md "What checkpointing costs", "Large programs"):
each repetition runs it natively, then under `prosper run` with the defaults (`--max-overhead 5
--snapshot auto`) and a pool large enough to hold it; the slowdown is the median of the paired
ratios (supervised wall time over the same repetition's native wall time).  Beside it: the
checkpoints, the longest stop, the measured cost, whether the commit under way at the program's
end was given up.  Then one run killed (`kill -9` of its process group) at half its native time
and resumed: its output must be the native one.

The wall time of `prosper run` is the user's: it includes the supervisor's end (the last commit
waited for or given up, the pool marked finished).

Writes bench/results/NAME.{json,md} (NAME: --name, default dense_large).  Needs a build.
"""
import argparse
import datetime
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import shutil
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prosper import cmd_bench as cb  # noqa: E402
from budget import dense_argv  # noqa: E402

STATS = ("checkpoints", "max_stop_ms", "interval_mean_ms", "interval_max_ms", "overhead_measured_pct",
         "snapshot_views", "snapshot_cow_faults", "snapshot_cow_ms", "snapshot_read_ms", "staging_bytes",
         "last_commit_given_up")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def killed_and_resumed(argv, pool_dir, extra, kill_at, expect):
    """Run argv under the defaults, kill its process group at kill_at seconds, resume it with
    the output appended: (identical to native, the resume's wall seconds, checkpoints before the
    kill)."""
    pool, out = os.path.join(pool_dir, "killed.prosper"), os.path.join(pool_dir, "killed.out")
    sup = cb._supervisor()
    try:
        with open(out, "wb") as f:
            p = subprocess.Popen([sup, "run", "--fresh", "--pool", pool, *extra, "--", *argv], stdout=f,
                                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                p.wait(timeout=kill_at)
                raise cb.BenchError("the program finished before the kill")
            except subprocess.TimeoutExpired:
                pass
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            t0 = time.monotonic()
            r = subprocess.run([sup, "resume", "--pool", pool], stdout=f, stderr=subprocess.PIPE, text=True)
            wall = time.monotonic() - t0
        if r.returncode != 0:
            raise cb.BenchError(f"the resume exited {r.returncode}: {r.stderr.strip()[-300:]}")
        with open(out) as f:
            return f.read() == expect, wall
    finally:
        cb._remove_pool(pool)
        if os.path.exists(out):
            os.unlink(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mib", type=int, default=4096, help="size of the dense writer (default 4096)")
    ap.add_argument("--seconds", type=float, default=12.0, help="its writes' native length (default 12)")
    ap.add_argument("--capacity", type=int, default=16384, help="the pool's --capacity in MiB (default 16384)")
    ap.add_argument("--pool-dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    ap.add_argument("--name", default="dense_large")
    args = ap.parse_args()
    pool_dir = args.pool_dir or tempfile.gettempdir()
    mach = cb.machine(pool_dir)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    argv = dense_argv(args.mib, args.seconds)
    extra = ["--capacity", str(args.capacity)]
    log(f"{' '.join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv))}")
    expect, native, runs, failures = {}, [], [], []
    tmp = tempfile.mkdtemp(prefix="prosper-dense-", dir=pool_dir)
    try:
        for rep in range(args.reps):
            try:
                wall = cb.run_native_again(argv, expect, "dense")
                # the defaults: no --max-overhead, no --snapshot (cmd_bench passes --interval 10)
                w, st = cb.run_supervised(argv, tmp, "dense", "diff", expect["dense"], extra)
                native.append(wall)
                runs.append({"wall": w, "ratio": w / wall, "stats": {k: st[k] for k in STATS}})
                log(f"rep {rep + 1}: native {wall:.2f} s, prosper {w:.2f} s, {w / wall:.3f}x, "
                    + ", ".join(f"{k} {st[k]}" for k in STATS))
            except cb.BenchError as e:
                failures.append(str(e))
                log(f"rep {rep + 1}: FAILED: {e}")
        kill = None
        if native:
            try:
                same, resume_s = killed_and_resumed(argv, tmp, extra, statistics.median(native) / 2, expect["dense"])
                kill = {"at_s": statistics.median(native) / 2, "identical": same, "resume_wall_s": resume_s}
                log(f"killed at {kill['at_s']:.1f} s and resumed: {'identical' if same else 'DIFFERENT'} output")
                if not same:
                    failures.append("killed and resumed: the output differs from the native one")
            except cb.BenchError as e:
                failures.append(f"killed and resumed: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cb.machine_end(mach)
    res = {"benchmark": "dense_large", "started": started, "reps": args.reps, "argv": [os.path.basename(argv[0])] + argv[1:],
           "command": "bench/scripts/dense_large.py " + " ".join(sys.argv[1:]), "machine": mach, "native_s": native,
           "runs": runs, "kill": kill, "failures": failures}
    md = [f"# A {args.mib} MiB dense writer under the default budget", "",
          f"Produced by `{res['command']}` (started {started}). Every number below was measured in that run.", "",
          f"{mach['nproc']} CPUs, Linux {mach['kernel']}; pool in {pool_dir} ({mach['pool_fs']}), --capacity "
          f"{args.capacity}; `{' '.join(res['argv'])}`; load average {mach['loadavg_1min_start']:.1f} at the start, "
          f"{mach['loadavg_1min_end']:.1f} at the end; steal {mach.get('steal_percent', 0):.1f} %.", "",
          "| rep | native s | prosper s | x | ckpts | views | longest stop ms | mean interval ms | measured cost % "
          "| cow faults | cow ms | view read ms | staging MiB | last commit given up |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, (n, r) in enumerate(zip(native, runs)):
        s = r["stats"]
        md.append(f"| {i + 1} | {n:.2f} | {r['wall']:.2f} | {r['ratio']:.3f} | {s['checkpoints']} | {s['snapshot_views']} "
                  f"| {s['max_stop_ms']:.1f} | {s['interval_mean_ms']:.0f} | {s['overhead_measured_pct']:.1f} "
                  f"| {s['snapshot_cow_faults']} | {s['snapshot_cow_ms']:.0f} | {s['snapshot_read_ms']:.0f} "
                  f"| {s['staging_bytes'] / 2**20:.0f} | {s['last_commit_given_up']} |")
    if runs:
        md += ["", f"Median of the paired ratios: **{statistics.median(r['ratio'] for r in runs):.3f}x**; "
               f"longest stop of all: {max(r['stats']['max_stop_ms'] for r in runs):.1f} ms."]
    if kill:
        md += ["", f"Killed (`kill -9` of its process group) at {kill['at_s']:.1f} s and resumed with its output appended: "
               f"{'identical to the native output' if kill['identical'] else 'DIFFERENT from the native output'} "
               f"(the resume ran {kill['resume_wall_s']:.1f} s)."]
    return cb.write_results(args.name, res, md)


if __name__ == "__main__":
    sys.exit(main())
