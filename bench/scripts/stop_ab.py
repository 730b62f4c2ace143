#!/usr/bin/env python3
"""stop_ab.py -- the mean stop of two revisions at the fixed cadence (--max-overhead 0, 10 ms),
side by side: the base revision is checked out into a temporary worktree and built there, the
head is this tree's build; each repetition runs every program under both, interleaved (base, then
head), so that the machine's drift falls on both alike.  Per program: the median over the
repetitions of each run's mean stop, its phases (the stop_*_us of --stats-json), the checkpoints
and the wall time.

A change of the stop is a change of its fixed part when the written bytes are alike (`read`,
`dirty`) and the other phases move; the phases say which part of the supervisor it is
(docs/run-resume.md, "Statistics").

Writes bench/results/NAME.{json,md} (NAME: --name, default stop_ab).  Needs a build of the head
(PROSPER_BUILD, else build/) and git.
"""
import argparse
import datetime
import json
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

PHASES = ("threads", "maps", "follow", "dirty", "read", "fds", "blob", "metadata", "tree")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build_base(rev, where):
    """A worktree of rev in where/src, built in where/build: (its prosper, its build dir)."""
    src, build = os.path.join(where, "src"), os.path.join(where, "build")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-f", src, rev], check=True,
                   capture_output=True)
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    log(f"building {rev} in {build}")
    subprocess.run(["cmake", "-S", src, "-B", build, *gen, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], check=True,
                   capture_output=True)
    subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)], check=True, capture_output=True)
    return os.path.join(src, "bin", "prosper"), build


def one_run(prosper, build, argv, work):
    """argv (below build/bench) under `prosper run` at the fixed cadence: its statistics and wall."""
    pool, stats = os.path.join(work, "ab.prosper"), os.path.join(work, "stats.json")
    for p in (pool, pool + ".undo", stats):
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.unlink(p))
    env = dict(os.environ, PROSPER_BUILD=build, PROSPER_MAX_OVERHEAD="0")
    t0 = time.monotonic()
    r = subprocess.run([prosper, "run", "--fresh", "--pool", pool, "--stats-json", stats, "--",
                        os.path.join(build, "bench", argv[0]), *argv[1:]], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise cb.BenchError(f"{argv[0]} under {build}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    with open(stats) as f:
        st = json.load(f)
    return {"mean_stop_ms": st["mean_stop_ms"], "checkpoints": st["checkpoints"], "wall_s": wall,
            **{p: st[f"stop_{p}_us"] for p in PHASES}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="the revision to compare with (a commit, tag or branch)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--programs", default="normal,random,quicksort,recursive-4")
    ap.add_argument("--name", default="stop_ab")
    ap.add_argument("--pool-dir", default="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    a = ap.parse_args()
    base_commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", a.base], check=True, capture_output=True,
                                 text=True).stdout.strip()
    head_commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=True, capture_output=True,
                                 text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    progs = a.programs.split(",")
    tmp = tempfile.mkdtemp(prefix="prosper-stop-ab-")
    work = tempfile.mkdtemp(prefix="prosper-stop-ab-", dir=a.pool_dir)
    load0 = os.getloadavg()[0]
    try:
        sides = {"base": build_base(a.base, tmp), "head": (os.path.join(ROOT, "bin", "prosper"), cb.BUILD)}
        runs = {(p, s): [] for p in progs for s in sides}
        for rep in range(a.reps):
            for p in progs:
                for side, (prosper, build) in sides.items():
                    runs[(p, side)].append(one_run(prosper, build, cb.PROGRAMS[p][0], work))
            log(f"repetition {rep + 1} of {a.reps} done")
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", os.path.join(tmp, "src")],
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()[0]
    med = lambda xs: statistics.median(xs)  # noqa: E731
    rows = []
    for p in progs:
        row = {"program": p}
        for side in sides:
            rs = runs[(p, side)]
            row[side] = {k: med([r[k] for r in rs]) for k in rs[0]}
            row[side]["mean_stop_ms_each"] = [r["mean_stop_ms"] for r in rs]
        row["stop_ratio"] = row["head"]["mean_stop_ms"] / row["base"]["mean_stop_ms"]
        rows.append(row)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = {"when": when, "base": base_commit, "head": head_commit + (" (with uncommitted changes)" if dirty else ""),
           "reps": a.reps, "cpus": os.cpu_count(), "load_start": load0, "load_end": load1, "pool_dir": a.pool_dir,
           "rows": rows}
    res = os.path.join(ROOT, "bench", "results")
    with open(os.path.join(res, a.name + ".json"), "w") as f:
        json.dump(out, f, indent=1)
    md = [f"# Mean stop at the fixed cadence: {base_commit} against {out['head']}", "",
          f"Produced by `bench/scripts/stop_ab.py --base {a.base} --reps {a.reps}` on {when}. Every number below was "
          "measured in that run.", "",
          f"{os.cpu_count()} CPUs; pools in {a.pool_dir}; `--max-overhead 0` (every 10 ms); {a.reps} repetitions, "
          f"the two sides interleaved; load average {load0:.1f} at the start, {load1:.1f} at the end. "
          "Medians over the repetitions; phases in us per checkpoint.", "",
          "| program | side | mean stop ms | ratio | " + " | ".join(PHASES) + " | ckpts | wall s |",
          "|---|---|---|---|" + "---|" * len(PHASES) + "---|---|"]
    for r in rows:
        for side in sides:
            s = r[side]
            ratio = f"{r['stop_ratio']:.2f}x" if side == "head" else ""
            md.append(f"| {r['program']} | {side} | {s['mean_stop_ms']:.3f} | {ratio} | " +
                      " | ".join(f"{s[p]:.0f}" for p in PHASES) + f" | {s['checkpoints']:.0f} | {s['wall_s']:.3f} |")
    with open(os.path.join(res, a.name + ".md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    try:
        main()
    except cb.BenchError as e:
        print(f"stop_ab: {e}", file=sys.stderr)
        sys.exit(2)
