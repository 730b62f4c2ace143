#!/usr/bin/env python3
"""The injected path beside the preloaded shim: the same program built twice (bench/CMakeLists.txt:
`random` and `random_static`, ...), the dynamic one checkpointed through the preloaded shim, the
static one through what the supervisor injects (src/supervisor/base/shimless.h).  Writes
bench/results/shimless.{json,md}.

    bench/scripts/shimless.py [--reps R] [--seconds S] [--programs a,b] [--pool-dir DIR] [--name N]

--pool-dir on a disk gives each run two tiers (a fast pool in memory, copied into the disk's
every second: docs/durability.md); --name N writes N.{json,md} (default shimless).

Per program and repetition, in an order rotated between repetitions: each build natively; each
supervised to its end (mean and longest stop, checkpoints, wall time); each supervised again,
killed at half its native time, and resumed to its end (the resume's time until the program runs
again and from the command's start, and the resumed output checked against native).  Medians
are shown, and the static/dynamic ratio of each, paired within a repetition.  Every supervised
and resumed run must print the native output, or the script fails.

What differs per checkpoint: the shim keeps its records as the program changes them (one 8-byte
read per checkpoint); without it, one injected run of a blob reads 64 signal dispositions and 3
interval timers, and the 16 resource limits are read from outside.
"""
import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from prosper.cmd_bench import PROGRAMS, fs_type, lengthened  # noqa: E402  (the one program table)

BUILD = os.environ.get("PROSPER_BUILD", os.path.join(ROOT, "build"))
SUPERVISOR = os.path.join(BUILD, "src", "supervisor", "prosper-supervise")
DEFAULT_PROGRAMS = ["random", "stream", "sparse", "quicksort", "recursive-4", "normal", "poisson", "pr"]
BUILDS = ("dynamic", "static")


def fail(msg):
    sys.exit(f"shimless: {msg}")


def argvs_of(name, seconds):
    """Both builds' command lines, with the same count of work (lengthened on the dynamic build)."""
    base = PROGRAMS[name][0]
    exes = {b: os.path.join(BUILD, "bench", base[0] + ("_static" if b == "static" else "")) for b in BUILDS}
    for exe in exes.values():
        if not os.access(exe, os.X_OK):
            fail(f"{exe} is not built (make build)")
    args = lengthened(name, [exes["dynamic"]] + base[1:], seconds)[1:]
    return {b: [exes[b]] + args for b in BUILDS}


def native(argv):
    t0 = time.monotonic()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    if r.returncode != 0:
        fail(f"native {argv[0]} exited {r.returncode}")
    return time.monotonic() - t0, r.stdout


def supervised(argv, pool, expect):
    stats = pool + ".stats.json"
    t0 = time.monotonic()
    r = subprocess.run([SUPERVISOR, "run", "--max-overhead", "0", "--fresh", "--pool", pool, "--stats-json", stats, "--"] + argv,
                       stdin=subprocess.DEVNULL, capture_output=True)
    wall = time.monotonic() - t0
    if r.returncode != 0 or r.stdout != expect:
        fail(f"supervised {argv[0]}: exit {r.returncode}, output {'same' if r.stdout == expect else 'DIFFERENT'}: "
             f"{r.stderr.decode(errors='replace')[-300:]}")
    with open(stats) as f:
        st = json.load(f)
    if st.get("disabled"):
        fail(f"supervised {argv[0]}: checkpointing stopped: {st['disabled']}")
    return {"wall_s": wall, "mean_stop_ms": st["mean_stop_ms"], "max_stop_ms": st["max_stop_ms"],
            "checkpoints": st["checkpoints"]}


def killed_and_resumed(argv, pool, expect, at):
    p = subprocess.Popen([SUPERVISOR, "run", "--max-overhead", "0", "--fresh", "--pool", pool, "--"] + argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(at)
    if p.poll() is not None:
        fail(f"{argv[0]} ended before its kill at {at:.2f} s")
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    time.sleep(0.05)
    stats = pool + ".resume.json"
    r = subprocess.run([SUPERVISOR, "resume", "--pool", pool, "--stats-json", stats], stdin=subprocess.DEVNULL,
                       capture_output=True)
    if r.returncode != 0 or r.stdout != expect:
        fail(f"resumed {argv[0]}: exit {r.returncode}, output {'same' if r.stdout == expect else 'DIFFERENT'}: "
             f"{r.stderr.decode(errors='replace')[-300:]}")
    with open(stats) as f:
        st = json.load(f)
    return {"running_after_ms": 1e3 * st["restore_seconds"], "command_to_running_ms": 1e3 * st["resume_command_seconds"]}


def measure(name, reps, pool_dir, seconds):
    argvs = argvs_of(name, seconds)
    runs = {b: [] for b in BUILDS}
    for rep in range(reps):
        order = BUILDS if rep % 2 == 0 else tuple(reversed(BUILDS))
        for b in order:
            t, out = native(argvs[b])
            pool = os.path.join(pool_dir, f"shimless-{name}-{b}.prosper")
            row = {"native_s": t}
            row.update(supervised(argvs[b], pool, out))
            row.update(killed_and_resumed(argvs[b], pool, out, t / 2))
            row["slowdown"] = row["wall_s"] / t
            runs[b].append(row)
        for suffix in ("", ".stats.json", ".resume.json"):
            for b in BUILDS:
                try:
                    os.unlink(os.path.join(pool_dir, f"shimless-{name}-{b}.prosper{suffix}"))
                except FileNotFoundError:
                    pass
    keys = ["native_s", "wall_s", "slowdown", "mean_stop_ms", "max_stop_ms", "checkpoints", "running_after_ms",
            "command_to_running_ms"]
    med = {b: {k: statistics.median(r[k] for r in runs[b]) for k in keys} for b in BUILDS}
    ratio = {k: statistics.median(s[k] / d[k] for s, d in zip(runs["static"], runs["dynamic"]) if d[k])
             for k in ("slowdown", "mean_stop_ms", "max_stop_ms", "running_after_ms")}
    return {"program": name, "argv": {b: [os.path.basename(argvs[b][0])] + argvs[b][1:] for b in BUILDS},
            "median": med, "static_over_dynamic": ratio, "runs": runs}


def markdown(res):
    m = res["machine"]
    out = ["# The injected path (static builds) beside the preloaded shim (dynamic builds)", "",
           f"Produced by `bench/scripts/shimless.py {res['args']}` on {res['date']}. "
           "Every number below was measured in that run.", "",
           f"{m['cpus']} CPUs, Linux {m['kernel']}; pools in {m['pool_dir']} ({m['pool_fs']}); interval 10 ms; "
           f"load average {m['loadavg_start']:.2f} at the start, {m['loadavg_end']:.2f} at the end; medians of "
           f"{res['reps']} repetitions, the two builds interleaved.", "",
           "Slowdown: supervised wall time over the same build's native time.  Running after: the resume's "
           "relaunch until the program runs; command to running: from the resume command's start.  Ratios are "
           "static over dynamic, paired per repetition.  Every supervised and resumed output was the native one.", "",
           "| program | native s dyn / static | slowdown dyn | static | ratio | mean stop ms dyn | static | ratio "
           "| longest stop ms dyn | static | running after ms dyn | static | command to running ms dyn | static |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["programs"]:
        d, s, q = r["median"]["dynamic"], r["median"]["static"], r["static_over_dynamic"]
        out.append(f"| {r['program']} | {d['native_s']:.2f} / {s['native_s']:.2f} | {d['slowdown']:.3f} | "
                   f"{s['slowdown']:.3f} | {q['slowdown']:.3f} | {d['mean_stop_ms']:.2f} | {s['mean_stop_ms']:.2f} | "
                   f"{q['mean_stop_ms']:.2f} | {d['max_stop_ms']:.1f} | {s['max_stop_ms']:.1f} | "
                   f"{d['running_after_ms']:.1f} | {s['running_after_ms']:.1f} | {d['command_to_running_ms']:.1f} | "
                   f"{s['command_to_running_ms']:.1f} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="native length of each program (default 2)")
    ap.add_argument("--programs", default=",".join(DEFAULT_PROGRAMS))
    ap.add_argument("--pool-dir", default="/dev/shm")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--name", default="shimless", help="the results' file name (default shimless)")
    a = ap.parse_args()
    names = [n for n in a.programs.split(",") if n]
    for n in names:
        if n not in PROGRAMS or n not in DEFAULT_PROGRAMS:
            fail(f"unknown program {n} (of {', '.join(DEFAULT_PROGRAMS)})")
    res = {"reps": a.reps, "seconds": a.seconds, "args": " ".join(sys.argv[1:]), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                       "pool_dir": a.pool_dir if not a.pool_dir.startswith(ROOT) else os.path.relpath(a.pool_dir, ROOT),
                       "pool_fs": fs_type(a.pool_dir), "loadavg_start": os.getloadavg()[0]},
           "programs": []}
    for n in names:
        r = measure(n, a.reps, a.pool_dir, a.seconds)
        res["programs"].append(r)
        q = r["static_over_dynamic"]
        print(f"{n}: slowdown static/dynamic {q['slowdown']:.3f}, mean stop {q['mean_stop_ms']:.2f}x, "
              f"running after {q['running_after_ms']:.2f}x", flush=True)
    res["machine"]["loadavg_end"] = os.getloadavg()[0]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, a.name + ".json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out, a.name + ".md"), "w") as f:
        f.write(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()
