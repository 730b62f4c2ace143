#!/usr/bin/env python3
"""budget.py -- what the overhead budget (`prosper run --max-overhead`, docs/run-resume.md "What
checkpointing costs") and the copy-on-write views ("Large programs") buy: each program natively,
under the fixed cadence with every cut copied in its stop (`--max-overhead 0 --snapshot copy`), the
fixed cadence with views (`--max-overhead 0`, every 10 ms) and under a budget (`--max-overhead
--percent`, default: prosper run's own, no --max-overhead given), interleaved over the repetitions; the slowdown is the
median over the repetitions of the paired ratio (supervised wall time / the wall time of the
native run just before it).  Beside it: the intervals achieved (mean, longest), the checkpoints taken, the
cost the supervisor measured, and the longest stop.  Every supervised run must print what the
native run printed.

Programs: random, quicksort, recursive-4, pr, sssp, kv (build/bench, their work lengthened to
about --seconds natively) and a dense writer of --dense-mib MiB (build/bench/scale: filled, then
written at random all over for about --seconds).

Writes bench/results/NAME.{json,md} (NAME: --name, default budget).  Needs a build (make build).
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
import tempfile
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from prosper import cmd_bench as cb  # noqa: E402

PROGRAMS = ["random", "quicksort", "recursive-4", "pr", "sssp", "kv"]
# copied: the fixed cadence with every cut copied in its stop (no copy-on-write view: snapshot.h);
# fixed: the fixed cadence, a view for a long stop (--snapshot auto); budget: --max-overhead --percent (or the
# default: none given), auto too
CONFIGS = [("copied", ["--max-overhead", "0", "--snapshot", "copy"]), ("fixed", ["--max-overhead", "0", "--snapshot", "auto"]),
           ("budget", None)]
TARGET = 1.10


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def after_fill(argv):
    """Seconds from the program's "filled" line to its end: the writes and the checksum, not the
    fill, whose time this guest varies by seconds (it charges a first fill of freed memory)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    t0 = time.monotonic()
    p.stdout.read()
    if p.wait() != 0 or not line.startswith("filled"):
        raise SystemExit(f"budget.py: {' '.join(argv)} failed (exit {p.returncode}, first line {line.strip()!r})")
    return time.monotonic() - t0


def dense_argv(mib, seconds):
    """scale MIB WRITES with WRITES chosen so that the writes take about `seconds` natively: timed from
    the fill's end (the fill itself once timed slower alone than with 40 M writes after it, and
    5e9 writes were chosen: a 124 s run)."""
    scale = os.path.join(cb.BUILD, "bench", "scale")
    probe = 40_000_000  # about a second of writes
    checksum = min(after_fill([scale, str(mib), "0"]) for _ in range(2))
    writes = min(after_fill([scale, str(mib), str(probe)]) for _ in range(2))
    per = (writes - checksum) / probe
    if per <= 0:
        raise SystemExit(f"budget.py: the dense writer's writes could not be timed (checksum alone {checksum:.3f} s, "
                         f"with {probe} writes {writes:.3f} s)")
    return [scale, str(mib), str(max(1, int(seconds / per)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0, help="native length of each program (default 5)")
    ap.add_argument("--programs", default=",".join(PROGRAMS) + ",dense")
    ap.add_argument("--dense-mib", type=int, default=2048, help="size of the dense writer (default 2048)")
    ap.add_argument("--pool-dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None,
                    help="a folder for the pools (default /dev/shm), relative to the project or absolute")
    ap.add_argument("--percent", type=float, default=None,
                    help="the budget measured against the fixed cadence (default: prosper run's own default, "
                         "no --max-overhead given and $PROSPER_MAX_OVERHEAD ignored)")
    ap.add_argument("--name", default="budget")
    ap.add_argument("--configs", default="copied,fixed,budget",
                    help="the supervised configurations to run, of copied,fixed,budget (default all; the budget's "
                         "acceptance needs only budget: its runs then come closer to their natives)")
    args = ap.parse_args()
    wanted = args.configs.split(",")
    if args.percent is None:  # the default is measured: nothing may choose another
        os.environ.pop("PROSPER_MAX_OVERHEAD", None)
        budget_options = ["--snapshot", "auto"]
    else:
        budget_options = ["--max-overhead", f"{args.percent:g}", "--snapshot", "auto"]
    if "budget" not in wanted or any(c not in dict(CONFIGS) for c in wanted):
        ap.error("--configs: a comma-separated subset of copied,fixed,budget that holds budget")
    configs = [(c, extra) for c, extra in CONFIGS if c in wanted]
    pool_dir = args.pool_dir or tempfile.gettempdir()
    shown_pool_dir = pool_dir
    if not os.path.isabs(pool_dir):
        pool_dir = os.path.join(ROOT, pool_dir)
    os.makedirs(pool_dir, exist_ok=True)
    mach = cb.machine(pool_dir)
    mach["pool_dir"] = shown_pool_dir
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    names = args.programs.split(",")
    argvs = {}
    for n in names:
        if n == "dense":
            argvs[n] = dense_argv(args.dense_mib, args.seconds)
        else:
            rel, _ = cb.PROGRAMS[n]
            argvs[n] = cb.lengthened(n, [os.path.join(cb.BUILD, "bench", rel[0])] + rel[1:], args.seconds)
        log(f"{n}: {' '.join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argvs[n]))}")
    runs = {n: {"native": [], **{c: [] for c, _ in configs}} for n in names}
    expect = {}
    failures = []
    tmp = tempfile.mkdtemp(prefix="prosper-budget-", dir=pool_dir)
    try:
        for rep in range(args.reps):
            for n in names:
                try:
                    for c, extra in configs:
                        # each supervised run is paired with a native run just before it: a run that
                        # leaves the machine busy (a fixed cadence's views: gigabytes of pools and
                        # copies to free) slows what follows it, native or not
                        wall = cb.run_native_again(argvs[n], expect, n)
                        runs[n]["native"].append(wall)
                        extra = extra if extra is not None else budget_options
                        w, st = cb.run_supervised(argvs[n], tmp, f"{n}-{c}", "diff", expect[n], extra)
                        runs[n][c].append({"wall": w, "native": wall, "ratio": w / wall, "stats": {k: st[k] for k in (
                            "checkpoints", "late", "mean_stop_ms", "max_stop_ms", "max_stop_after_first_ms",
                            "interval_mean_ms", "interval_max_ms", "interval_chosen_max_ms", "overhead_measured_pct",
                            "overhead_stop_ms", "overhead_fault_ms", "overhead_wait_ms", "write_fault_us",
                            "max_overhead_pct", "snapshot_views")}})
                    log(f"rep {rep + 1} {n}: native {wall:.3f} s (the last), " + ", ".join(
                        f"{c} {runs[n][c][-1]['ratio']:.3f}x" for c, _ in configs))
                except cb.BenchError as e:
                    failures.append(f"{n}: {e}")
                    log(f"rep {rep + 1} {n}: FAILED: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cb.machine_end(mach)
    rows = []
    for n in names:
        r = runs[n]
        if not r["native"] or any(not r[c] for c, _ in configs):
            continue
        row = {"program": n, "argv": [os.path.basename(argvs[n][0])] + argvs[n][1:],
               "native_s": statistics.median(r["native"]),
               "native_spread": (max(r["native"]) - min(r["native"])) / statistics.median(r["native"])}
        for c, _ in configs:
            runs_c = r[c]
            mid = sorted(runs_c, key=lambda x: x["ratio"])[len(runs_c) // 2]
            row[c] = {"ratio": statistics.median(x["ratio"] for x in runs_c),
                      "ratios": [x["ratio"] for x in runs_c],
                      "natives": [x["native"] for x in runs_c],
                      "max_stop_ms": max(x["stats"]["max_stop_ms"] for x in runs_c),
                      **{k: mid["stats"][k] for k in ("checkpoints", "interval_mean_ms", "interval_max_ms",
                                                      "overhead_measured_pct", "max_overhead_pct", "late",
                                                      "snapshot_views")}}
        row["budget_within_target"] = row["budget"]["ratio"] <= TARGET
        rows.append(row)
    # the budget the runs kept, as they reported it (the default's, when none was given)
    kept = {r["budget"]["max_overhead_pct"] for r in rows}
    if args.percent is None and len(kept) > 1:
        failures.append(f"the budget runs reported different budgets: {sorted(kept)}")
    percent = args.percent if args.percent is not None else (kept.pop() if kept else float("nan"))
    res = {"benchmark": "budget", "started": started, "reps": args.reps, "seconds": args.seconds,
           "command": "bench/scripts/budget.py " + " ".join(sys.argv[1:]), "machine": mach,
           "percent": percent, "percent_given": args.percent is not None, "configs": wanted, "target_ratio": TARGET, "rows": rows, "failures": failures}
    md = [f"# The overhead budget: the fixed cadence against --max-overhead {percent:g}"
          + ("" if args.percent is not None else " (the default)"), "",
          f"Produced by `{res['command']}` (started {started}). Every number below was measured in that run.", "",
          f"{mach['nproc']} CPUs, Linux {mach['kernel']}; pools in {shown_pool_dir} ({mach['pool_fs']}); "
          f"--interval 10 ms; {args.reps} repetitions, interleaved ({', '.join('native, ' + c for c in wanted)}: each "
          f"supervised run paired with the native run just before it); load average "
          f"{mach['loadavg_1min_start']:.1f} at the start, {mach['loadavg_1min_end']:.1f} at the end; steal "
          f"{mach.get('steal_percent', 0):.1f} %.", "",
          "x = median over the repetitions of (supervised wall / the wall of the native run just before it). "
          "copied = `--max-overhead 0 --snapshot copy` (every 10 ms, every cut copied in its stop); "
          f"fixed = `--max-overhead 0 --snapshot auto` (every 10 ms, a copy-on-write view for a long stop); budget = "
          f"`--max-overhead {percent:g} --snapshot auto`"
          + ("" if args.percent is not None else " (no --max-overhead given: the default, as the runs reported it)")
          + ". Views = cuts read from a copy-on-write view. "
          "Intervals (achieved: from one cut's start to the next's) and the measured cost are the median repetition's; "
          "the longest stop is the longest of all repetitions. Target: the budget at or under "
          f"{TARGET:.2f}x.", "",
          "| program | native s | native spread | copied x | copied longest stop ms | fixed x | fixed ckpts | fixed views "
          "| fixed mean interval ms | fixed longest stop ms "
          "| budget x | budget ckpts | mean interval ms | longest interval ms | measured cost % | longest stop ms | within 1.10x |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = r["budget"]
        c_ = (f"| {r['copied']['ratio']:.3f} | {r['copied']['max_stop_ms']:.1f} " if "copied" in r else "| - | - ")
        f_ = r.get("fixed")
        f_ = (f"| {f_['ratio']:.3f} | {f_['checkpoints']} | {f_['snapshot_views']} | {f_['interval_mean_ms']:.1f} "
              f"| {f_['max_stop_ms']:.1f} " if f_ else "| - | - | - | - | - ")
        md.append(f"| {r['program']} ({' '.join(r['argv'][1:])}) | {r['native_s']:.3f} | {100 * r['native_spread']:.0f}% "
                  + c_ + f_ +
                  f"| {b['ratio']:.3f} | {b['checkpoints']} | {b['interval_mean_ms']:.1f} | {b['interval_max_ms']:.1f} "
                  f"| {b['overhead_measured_pct']:.1f} | {b['max_stop_ms']:.1f} | {'yes' if r['budget_within_target'] else 'NO'} |")
    return cb.write_results(args.name, res, md)


if __name__ == "__main__":
    sys.exit(main())
