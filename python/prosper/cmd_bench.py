"""prosper bench MODE [OPTIONS] -- benchmarks of the supervisor (measurements, not tests).

Modes:
  overhead   For each bench program (build/bench): native runs and supervised runs at 10 ms with
             the page, diff (the default: stack diff at 8 B, other memory at 256 B) and full
             trackers, and diff with --copy precopy, interleaved round-robin over --reps
             repetitions; the median wall time of each and the slowdown vs the native median.  Then, untimed: one diff run with
             --exact-stack-stats (stack bytes per checkpoint: page vs 8 B diff vs the exact
             minimum, all from that one run) and one run killed with SIGKILL at about half the
             native time (later if its first checkpoint has not committed yet) and resumed: resume time (relaunch until the program runs again;
             command ms: from the command's start, its checks of the pool included) and
             restore GB/s = restored_bytes / restore_memory_seconds (the memory writes alone; with the
             default lazy fill, from its first page to its last, the program running meanwhile).
             Each target is printed beside its measured number as met or not met.

  resume     How soon a killed program runs again: pr, sssp and kv (--programs) killed at half
             their native time, the same checkpoint resumed --reps times with --restore lazy and
             eager in turn (relaunch to running, the command's start to running, the memory's
             writes, pages touched before they were back, the output checked).  Pools on a memory
             file system only (the checkpoint is copied between resumes).

  scale      Programs of several GiB (build/bench/scale: MIB MiB filled, then written all over at
             random for about --seconds s): per size (--sizes, MiB), the native time, one supervised
             run (slowdown, checkpoints per second, late ticks, mean and longest stop) and one run
             killed at half time and resumed (resume time, restore GB/s, the output checked).  A size
             the machine cannot hold (about 4x it in memory) is listed as not run, with the reason.

Pools go to a fresh directory under --pool-dir (default /dev/shm) and are deleted after each
run.  A pool on a disk-backed file system gets two tiers (a fast pool in memory, copied into the
pool every second: docs/durability.md); the output says which kind of file system held them.  Every supervised run must print the native checksum, also after a
resume; a run that does not is a failure (exit 1)."""
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from prosper.procs import wait_group_gone
from prosper.paths import BUILD, ROOT, die, tool

EXAMPLE = "prosper bench overhead --programs quicksort,pr --reps 3"  # shown by --help

SUPERVISOR = "src/supervisor/prosper-supervise"
INTERVAL_MS = 10
TRACKERS = ("page", "diff", "full")
# Every supervised mode: the three trackers, and the default tracker with --copy precopy (most
# written pages read by a pass before the stop, while the program runs).
SUPERVISED = {"page": ("page", ()), "diff": ("diff", ()), "full": ("full", ()),
              "precopy": ("diff", ("--copy", "precopy"))}

# name -> (argv below build/bench, kind).  kind decides the slowdown target.
PROGRAMS = {
    "random": (["random"], "micro"),
    "stream": (["stream"], "micro"),
    "sparse": (["sparse"], "micro"),
    "quicksort": (["quicksort"], "micro"),
    "recursive-4": (["recursive", "4"], "micro"),
    "recursive-8": (["recursive", "8"], "micro"),
    "recursive-16": (["recursive", "16"], "micro"),
    "normal": (["normal"], "micro"),
    "poisson": (["poisson"], "micro"),
    "pr": (["pr"], "graph"),
    "sssp": (["sssp"], "graph"),
    "kv": (["kv"], "kv"),
    "pr_mt": (["pr_mt", "18", "3"], "threads"),
    "prodcons": (["prodcons"], "threads"),
}
ALIASES = {"recursive": ["recursive-4", "recursive-8", "recursive-16"]}
# The count of work each program does by default (its rounds, operations, iterations or sources:
# bench/micro, bench/workloads), which --seconds scales, and the arguments that come before the
# count where it is not next (pr and sssp: the graph's scale, which stays).
DEFAULT_COUNT = {"random": 1000, "stream": 50000, "sparse": 100000, "quicksort": 150, "recursive-4": 800,
                 "recursive-8": 400, "recursive-16": 200, "normal": 1000000, "poisson": 400000,
                 "kv": 10000000, "pr": 20, "sssp": 8, "prodcons": 400000}
COUNT_AFTER = {"pr": ["18"], "sssp": ["18"]}

# Targets (fractions / ratios / GB/s).  The slowdown target applies to the default (diff) mode.
# The one place each is written: `bench resume` and `prosper eval`'s verdicts read them from here.
TARGETS = {
    "slowdown_micro": 0.03,
    "slowdown_graph": 0.10,
    "stack_over_exact": 1.05,
    "restore_gbps": 4.0,  # full restore, restored bytes / the memory writes' time
    "resume_ms": 5.0,  # relaunch -> running, for pr, sssp and kv
    "max_stop_ms": 2.0,  # the longest stop of a run, its first included (every program)
    "max_stop_after_first_ms": 1.0,  # the longest stop after the first (every program)
}


def add_arguments(p):
    p.add_argument("mode", choices=sorted(MODES), help="which benchmark (overhead, resume, scale)")
    p.add_argument("--programs", default=None,
                   help="comma-separated subset of: " + ", ".join(PROGRAMS) + " (recursive = all three depths)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of each timed run (default 3; resume: "
                   "resumes each way)")
    p.add_argument("--quick", action="store_true", help="one repetition")
    p.add_argument("--seconds", type=float, default=None, metavar="S",
                   help="scale: seconds of random writes after the fill (default 4). overhead: the long mode: lengthen every program's work so that it runs about S s natively "
                        "(e.g. 5), so that a 3%% target is above the machine's noise; the arguments used are "
                        "in the table")
    p.add_argument("--sizes", default=None, metavar="MIB,...",
                   help="scale: the program sizes in MiB (default 512,1024,2048,4096,8192; --quick 64,128)")
    p.add_argument("--pool-dir", default=None,
                   help="where pools are made (default /dev/shm when it exists, else the temporary directory)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout; the table goes to stderr")
    p.add_argument("--md", metavar="PATH", default=None, help="also write the tables as markdown to PATH")


# ---------------------------------------------------------------------------------------------
# machine facts

def fs_type(path):
    """The file system type holding path (longest mount point in /proc/self/mountinfo)."""
    path = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                mnt = left.split()[4].replace("\\040", " ")
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, kind = mnt, right.split()[0]
    except OSError:
        pass
    return kind


MEMORY_FS = ("tmpfs", "ramfs", "hugetlbfs")


def cpu_times():
    """(steal, total) jiffies of all CPUs from /proc/stat, or None: on a virtual machine, steal
    is the time the host ran something else while this machine had work."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[7] if len(v) > 7 else 0, sum(v[:8])
    except (OSError, ValueError):
        return None


def machine(pool_dir):
    kind = fs_type(pool_dir)
    return {"nproc": os.cpu_count(), "kernel": platform.release(), "pool_dir": pool_dir,
            "pool_fs": kind, "pool_disk_backed": kind not in MEMORY_FS,
            "loadavg_1min_start": os.getloadavg()[0], "_cpu_start": cpu_times()}


def machine_end(m):
    """The end of the run: load average, and the share of CPU time the host took (steal)."""
    m["loadavg_1min_end"] = os.getloadavg()[0]
    a, b = m.pop("_cpu_start", None), cpu_times()
    if a and b and b[1] > a[1]:
        m["steal_percent"] = 100.0 * (b[0] - a[0]) / (b[1] - a[1])


# ---------------------------------------------------------------------------------------------
# one run

class BenchError(Exception):
    pass


def _supervisor():
    """The supervisor's path; waits a little if the build is being replaced under us."""
    path = os.path.join(BUILD, SUPERVISOR)
    for _ in range(60):
        if os.access(path, os.X_OK):
            return path
        time.sleep(1)
    return tool(SUPERVISOR)  # dies with the usual message


def _committed(pool):
    """Does the pool hold a committed epoch (what `prosper resume` needs)?"""
    r = subprocess.run([tool("src/cli/prosper-pool"), "inspect", "--json", pool], capture_output=True, text=True)
    try:
        return r.returncode == 0 and json.loads(r.stdout).get("epoch", 0) >= 1
    except ValueError:
        return False


def _remove_pool(pool):
    d, base = os.path.split(pool)
    for n in os.listdir(d):
        if n.startswith(base):
            p = os.path.join(d, n)
            if os.path.isdir(p):  # its file-undo journal, <pool>.undo
                shutil.rmtree(p, ignore_errors=True)
                continue
            try:
                os.unlink(p)
            except OSError:
                pass


def _read_stats(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BenchError(f"no statistics from the supervisor ({e})")


def run_native(argv):
    t0 = time.monotonic()
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise BenchError(f"native run of {os.path.basename(argv[0])} exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return wall, r.stdout


def run_native_again(argv, expect, name):
    """A repetition's native run of NAME: its wall time; what it prints must be what its first
    run printed (kept in expect[name])."""
    wall, out = run_native(argv)
    if expect.setdefault(name, out) != out:
        raise BenchError("the native runs printed different outputs")
    return wall


def supervise_argv(pool, stats, tracker, extra=()):
    return [_supervisor(), "run", "--pool", pool, "--interval", str(INTERVAL_MS),
            "--stack-tracker", tracker, "--heap-tracker", tracker, "--stats-json", stats, *extra, "--"]


def lengthened(name, argv, seconds):
    """ARGV with NAME's count of work scaled so that its native run takes about SECONDS (a
    program of one second makes a 3 % target smaller than the machine's noise).  A count is
    proportional to time but for a fixed part (pr's and sssp's graph build): a second probe fits
    time = fixed + count x per-round.  Programs without a count (pr_mt) stay as they are."""
    if name not in DEFAULT_COUNT:
        return argv
    c1 = DEFAULT_COUNT[name]
    t1, _ = run_native(argv)
    c2 = max(1, round(c1 * seconds / t1))
    t2, _ = run_native(argv + COUNT_AFTER.get(name, []) + [str(c2)])
    if c2 != c1 and abs(t2 - seconds) > 0.2 * seconds and t2 > t1:
        c2 = max(1, round(c2 + (seconds - t2) * (c2 - c1) / (t2 - t1)))
    return argv + COUNT_AFTER.get(name, []) + [str(c2)]


def run_supervised(argv, tmp, tag, tracker, expect, extra=()):
    pool, stats = os.path.join(tmp, f"{tag}.pool"), os.path.join(tmp, f"{tag}.stats.json")
    try:
        cmd = supervise_argv(pool, stats, tracker, extra) + argv
        t0 = time.monotonic()
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        wall = time.monotonic() - t0
        name = os.path.basename(argv[0])
        if r.returncode != 0:
            raise BenchError(f"supervised ({tracker}) run of {name} exited {r.returncode}: {r.stderr.strip()[-300:]}")
        if r.stdout != expect:
            raise BenchError(f"supervised ({tracker}) run of {name} printed {r.stdout.strip()!r}, "
                             f"native printed {expect.strip()!r}")
        st = _read_stats(stats)
        if st.get("disabled"):
            raise BenchError(f"supervised ({tracker}) run of {name}: checkpointing was disabled: {st['disabled']}")
        return wall, st
    finally:
        _remove_pool(pool)
        if os.path.exists(stats):
            os.unlink(stats)


def run_and_kill(argv, pool, out, kill_after, extra=()):
    """Start a supervised (default diff) run into pool with stdout to the file out, SIGKILL its
    process group after kill_after seconds (later if its first checkpoint has not committed yet);
    the seconds it ran."""
    name = os.path.basename(argv[0])
    with open(out, "w") as fo:
        p = subprocess.Popen([_supervisor(), "run", "--pool", pool, "--interval", str(INTERVAL_MS), "--max-overhead", "0",
                              *extra, "--"]
                             + argv,
                             stdin=subprocess.DEVNULL, stdout=fo, stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.monotonic()
    try:
        p.wait(timeout=kill_after)
        raise BenchError(f"{name} finished under the supervisor before the kill at {kill_after:.2f} s")
    except subprocess.TimeoutExpired:
        pass
    # A short program's first checkpoint (every mapping copied whole) can still be committing
    # at half its native time: the kill waits for it, or there would be nothing to resume.
    while not _committed(pool):
        if p.poll() is not None:
            raise BenchError(f"{name} finished under the supervisor before its first checkpoint committed")
        time.sleep(0.005)
    killed_at = time.monotonic() - t0
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    p.stderr.close()
    if not wait_group_gone(p.pid, 5.0):
        raise BenchError(f"{name}: processes of the killed run are still alive")
    return killed_at


def resume_once(name, pool, out, stats, expect, extra=()):
    """`resume` the pool to the program's end with stdout to the same file out (the supervisor cuts
    it back to its checkpointed size and position); the statistics, with output_matches."""
    with open(out, "r+") as fo:
        r = subprocess.run([_supervisor(), "resume", "--pool", pool, "--stats-json", stats, *extra],
                           stdin=subprocess.DEVNULL, stdout=fo, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise BenchError(f"resume of {name} exited {r.returncode}: {r.stderr.strip()[-300:]}")
    with open(out) as f:
        printed = f.read()
    st = _read_stats(stats)
    if not st.get("resumed"):
        raise BenchError(f"resume of {name}: the statistics say it did not resume")
    # a wrong output after resume is reported with the row (the restore was still timed)
    st["output_matches"] = printed == expect
    st["output"] = printed.strip()
    return st


def run_kill_resume(argv, tmp, tag, kill_after, expect, extra=()):
    """A supervised run killed at kill_after (run_and_kill), resumed once; the resume statistics
    with killed_at_s."""
    pool, stats = os.path.join(tmp, f"{tag}.pool"), os.path.join(tmp, f"{tag}.stats.json")
    out = os.path.join(tmp, f"{tag}.out")
    try:
        killed_at = run_and_kill(argv, pool, out, kill_after, extra)
        st = resume_once(os.path.basename(argv[0]), pool, out, stats, expect)
        st["killed_at_s"] = killed_at
        return st
    finally:
        _remove_pool(pool)
        for f in (stats, out):
            if os.path.exists(f):
                os.unlink(f)


def measure_each(res, key, items, measure, check, pool_dir, log):
    """The loop every benchmark runs: for each (item, label), row = measure(item, tmp) appended to
    res[key] (None: not run, the measure said why); a BenchError, or each text check(row)
    returns (a wrong output), is a failure in res["failures"] and on stderr.  tmp is a fresh
    directory under pool_dir, removed at the end (the runs remove their own pools); then the
    machine's end is read (load, steal)."""
    tmp = tempfile.mkdtemp(prefix="prosper-bench-", dir=pool_dir)
    try:
        for item, label in items:
            try:
                row = measure(item, tmp)
                if row is None:
                    continue
                res[key].append(row)
                for f in check(row):
                    res["failures"].append(f"{label}: {f}")
                    log(f"  {label}: WRONG OUTPUT: {f}")
            except BenchError as e:
                res["failures"].append(f"{label}: {e}")
                log(f"  {label}: FAILED: {e}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    machine_end(res["machine"])


# ---------------------------------------------------------------------------------------------
# overhead

def _per(st, key):
    n = st.get("checkpoints", 0)
    return st.get(key, 0) / n if n else 0.0


def _target(value, limit, lower_is_better=True):
    if value is None:
        return {"target": limit, "measured": None, "met": None}
    return {"target": limit, "measured": value, "met": value <= limit if lower_is_better else value >= limit}


def measure_program(name, reps, tmp, log, seconds=None):
    rel, kind = PROGRAMS[name]
    argv = [os.path.join(BUILD, "bench", rel[0])] + rel[1:]
    if not os.access(argv[0], os.X_OK):
        raise BenchError(f"build/bench/{rel[0]} is not built")
    if seconds:
        argv = lengthened(name, argv, seconds)
        rel = [os.path.basename(argv[0])] + argv[1:]
    modes = ["native"] + list(SUPERVISED)
    walls = {m: [] for m in modes}
    stats = {m: [] for m in SUPERVISED}
    _, expect = run_native(argv)  # warm-up (page cache, CPU frequency); also the reference output
    for rep in range(reps):
        # rotate the order so no mode always runs first after another program
        order = modes[rep % len(modes):] + modes[:rep % len(modes)]
        for m in order:
            if m == "native":
                wall, got = run_native(argv)
                if got != expect:
                    raise BenchError(f"native {name} is not deterministic: {got!r} vs {expect!r}")
            else:
                tracker, extra = SUPERVISED[m]
                wall, st = run_supervised(argv, tmp, f"{name}-{m}-{rep}", tracker, expect, extra)
                stats[m].append(st)
            walls[m].append(wall)
        log(f"  {name} rep {rep + 1}/{reps}: " + ", ".join(f"{m} {walls[m][-1]:.3f} s" for m in modes))
    native = statistics.median(walls["native"])
    row = {"program": name, "argv": rel, "kind": kind, "native_s": native, "native_runs_s": walls["native"],
           # how noisy the machine was: the spread of the native runs relative to their median
           "native_spread": (max(walls["native"]) - min(walls["native"])) / native}
    for m in SUPERVISED:
        med = statistics.median(walls[m])
        sts = stats[m]
        row[m] = {
            "median_s": med,
            "runs_s": walls[m],
            "slowdown": med / native - 1.0,
            "checkpoints": statistics.median(s["checkpoints"] for s in sts),
            "late": statistics.median(s["late"] for s in sts),
            "mean_stop_ms": statistics.median(s["mean_stop_ms"] for s in sts),
            "mean_threads": statistics.median(s["mean_threads"] for s in sts),
            "thread_capture_us": statistics.median(s["thread_capture_us"] for s in sts),
            "max_stop_ms": max(s["max_stop_ms"] for s in sts),
            "max_stop_after_first_ms": max(s["max_stop_after_first_ms"] for s in sts),
            "stack_bytes_per_ckpt": statistics.median(_per(s, "stack_bytes") for s in sts),
            "other_bytes_per_ckpt": statistics.median(_per(s, "other_bytes") for s in sts),
            "new_mapping_bytes": statistics.median(s["new_mapping_bytes"] for s in sts),
            "stop_read_bytes_per_ckpt": statistics.median(_per(s, "stop_read_bytes") for s in sts),
            "precopy_bytes_per_ckpt": statistics.median(_per(s, "precopy_bytes") for s in sts),
            "precopy_reread_bytes_per_ckpt": statistics.median(_per(s, "precopy_reread_bytes") for s in sts),
            "fixed_stop_us": statistics.median(_fixed_stop_us(s) for s in sts),
        }
    d = row["diff"]
    row["slowdown"] = d["slowdown"]
    row["checkpoints"] = d["checkpoints"]
    row["mean_stop_ms"] = d["mean_stop_ms"]
    row["mean_threads"] = d["mean_threads"]
    row["thread_capture_us"] = d["thread_capture_us"]
    row["late"] = d["late"]

    # untimed: page vs 8 B diff vs exact, all from one run's checkpoints
    _, ex = run_supervised(argv, tmp, f"{name}-exact", "diff", expect, ["--exact-stack-stats"])
    row["exact_run_checkpoints"] = ex["checkpoints"]
    row["stack_page_bytes_per_ckpt"] = _per(ex, "stack_page_bytes")
    row["stack_diff_bytes_per_ckpt"] = _per(ex, "stack_bytes")
    row["stack_exact_bytes_per_ckpt"] = _per(ex, "stack_exact_bytes")
    row["stack_diff_over_exact"] = (row["stack_diff_bytes_per_ckpt"] / row["stack_exact_bytes_per_ckpt"]
                                    if row["stack_exact_bytes_per_ckpt"] else None)
    row["other_page_bytes_per_ckpt"] = _per(ex, "other_page_bytes")
    row["other_diff_bytes_per_ckpt"] = _per(ex, "other_bytes")

    # untimed: SIGKILL at about half the native time, then resume
    kill_after = native / 2
    rs = run_kill_resume(argv, tmp, f"{name}-kill", kill_after, expect)
    secs, nbytes = rs["restore_memory_seconds"], rs["restored_bytes"]
    row["kill_after_s"] = rs["killed_at_s"]  # later than kill_after if the first commit was
    row["resume_seconds"] = rs["restore_seconds"]
    row["resume_command_seconds"] = rs.get("resume_command_seconds")
    row["restore_lazy"] = rs.get("restore_lazy")
    row["restore_memory_seconds"] = secs
    row["restored_bytes"] = nbytes
    row["restore_gbps"] = nbytes / secs / 1e9 if secs > 0 else None
    row["resume_checkpoints"] = rs["checkpoints"]
    row["resume_output_matches"] = rs["output_matches"]
    if not rs["output_matches"]:
        row["resume_output"] = rs["output"]
        row["native_output"] = expect.strip()

    slow_limit = {"micro": TARGETS["slowdown_micro"], "graph": TARGETS["slowdown_graph"]}.get(kind)
    row["targets"] = {
        "slowdown": _target(row["slowdown"], slow_limit) if slow_limit is not None else None,
        "stack_over_exact": _target(row["stack_diff_over_exact"], TARGETS["stack_over_exact"]),
        "restore_gbps": _target(row["restore_gbps"], TARGETS["restore_gbps"], lower_is_better=False),
        "max_stop_ms": _target(d["max_stop_ms"], TARGETS["max_stop_ms"]),
        "max_stop_after_first_ms": _target(d["max_stop_after_first_ms"], TARGETS["max_stop_after_first_ms"]),
    }
    if kind in ("graph", "kv"):
        row["targets"]["resume_ms"] = _target(1000 * row["resume_seconds"], TARGETS["resume_ms"])
    log(f"  {name}: native {native:.3f} s, diff {d['median_s']:.3f} s ({100 * d['slowdown']:+.1f}%), "
        f"restore {row['restore_gbps'] or 0:.2f} GB/s")
    return row


def _pct(x):
    return "-" if x is None else f"{100 * x:+.1f}%"


def _num(x, fmt="{:.0f}"):
    return "-" if x is None else fmt.format(x)


def _met(t):
    if t is None:
        return "-"
    if t["met"] is None:
        return "n/a"
    return "met" if t["met"] else "NOT met"


def tables(res):
    """(title, header, rows) for the text and markdown renderings."""
    progs = res["programs"]

    def label(r):  # the long mode shows the lengthened arguments
        return f"{r['program']} ({' '.join(r['argv'][1:])})" if res.get("seconds") else r["program"]
    t1 = ("Wall time (median of %d) and slowdown vs native" % res["reps"],
          ["program", "native s", "native spread", "page s", "page", "diff s", "diff", "full s", "full",
           "ckpts", "late", "stop ms", "threads", "us/thread"],
          [[label(r), f"{r['native_s']:.3f}", f"{100 * r['native_spread']:.0f}%",
            f"{r['page']['median_s']:.3f}", _pct(r["page"]["slowdown"]),
            f"{r['diff']['median_s']:.3f}", _pct(r["diff"]["slowdown"]),
            f"{r['full']['median_s']:.3f}", _pct(r["full"]["slowdown"]),
            _num(r["checkpoints"]), _num(r["late"]), f"{r['mean_stop_ms']:.2f}", f"{r['mean_threads']:.1f}",
            f"{r['thread_capture_us']:.1f}"] for r in progs])
    t2 = ("Bytes per checkpoint (one untimed diff run) and resume after SIGKILL at half the native time",
          ["program", "stack page", "stack 8 B diff", "stack exact", "diff/exact", "other page",
           "other 256 B diff", "restored MiB", "resume ms", "command ms", "fill", "memory ms", "restore GB/s",
           "resumed output"],
          [[r["program"], _num(r["stack_page_bytes_per_ckpt"]), _num(r["stack_diff_bytes_per_ckpt"]),
            _num(r["stack_exact_bytes_per_ckpt"]), _num(r["stack_diff_over_exact"], "{:.3f}x"),
            _num(r["other_page_bytes_per_ckpt"]), _num(r["other_diff_bytes_per_ckpt"]),
            f"{r['restored_bytes'] / 2**20:.2f}", f"{1000 * r['resume_seconds']:.2f}",
            _num(None if r.get("resume_command_seconds") is None else 1000 * r["resume_command_seconds"], "{:.2f}"),
            "lazy" if r.get("restore_lazy") else "eager", f"{1000 * r['restore_memory_seconds']:.2f}",
            _num(r["restore_gbps"], "{:.2f}"), "same" if r["resume_output_matches"] else "WRONG"] for r in progs])
    T = TARGETS
    t3 = ("Targets (slowdown of the default diff mode; micro <= %d%%, pr/sssp <= %d%%; stack <= %.2fx exact; "
          "restore >= %.0f GB/s; resume <= %.0f ms for pr, sssp, kv; longest stop of the diff runs <= %g ms, "
          "<= %g ms after the first)" % (
              100 * T["slowdown_micro"], 100 * T["slowdown_graph"], T["stack_over_exact"], T["restore_gbps"],
              T["resume_ms"], T["max_stop_ms"], T["max_stop_after_first_ms"]),
          ["program", "slowdown", "target", "slowdown met", "stack/exact", "target", "stack met",
           "restore GB/s", "target", "restore met", "resume ms", "target", "resume met",
           "max stop ms", "met", "after the first", "met"],
          [])
    for r in progs:
        t = r["targets"]
        s = t["slowdown"]
        t3[2].append([r["program"], _pct(r["slowdown"]), f"<= {100 * s['target']:.0f}%" if s else "none", _met(s),
                      _num(r["stack_diff_over_exact"], "{:.3f}x"), f"<= {T['stack_over_exact']:.2f}x",
                      _met(t["stack_over_exact"]), _num(r["restore_gbps"], "{:.2f}"),
                      f">= {T['restore_gbps']:.0f}", _met(t["restore_gbps"]), f"{1000 * r['resume_seconds']:.2f}",
                      f"<= {T['resume_ms']:.0f}" if t.get("resume_ms") else "none", _met(t.get("resume_ms")),
                      f"{r['diff']['max_stop_ms']:.1f}", _met(t["max_stop_ms"]),
                      f"{r['diff']['max_stop_after_first_ms']:.1f}", _met(t["max_stop_after_first_ms"])])
    t4 = ("The stop: every written byte read while stopped (diff) or most of them by a pass before it "
          "(precopy, same tracker)",
          ["program", "diff s", "diff", "precopy s", "precopy", "stop ms diff", "stop ms precopy",
           "fixed part us diff", "max stop ms diff", "max stop ms precopy", "KiB read stopped diff",
           "KiB read stopped precopy", "KiB pre-copied", "KiB read again"],
          [[label(r), f"{r['diff']['median_s']:.3f}", _pct(r["diff"]["slowdown"]),
            f"{r['precopy']['median_s']:.3f}", _pct(r["precopy"]["slowdown"]),
            f"{r['diff']['mean_stop_ms']:.2f}", f"{r['precopy']['mean_stop_ms']:.2f}",
            f"{r['diff']['fixed_stop_us']:.0f}",
            f"{r['diff']['max_stop_ms']:.1f}", f"{r['precopy']['max_stop_ms']:.1f}",
            _num(r["diff"]["stop_read_bytes_per_ckpt"] / 1024), _num(r["precopy"]["stop_read_bytes_per_ckpt"] / 1024),
            _num(r["precopy"]["precopy_bytes_per_ckpt"] / 1024),
            _num(r["precopy"]["precopy_reread_bytes_per_ckpt"] / 1024)] for r in progs if "precopy" in r])
    return [t1, t2, t3, t4]


def _fixed_stop_us(st):
    """The part of a stop paid whatever the program wrote: every phase but the tracker's scans and
    the copy of the written pages (stopclock.h)."""
    return sum(v for k, v in st.items() if k.startswith("stop_") and k.endswith("_us")
               and k not in ("stop_dirty_us", "stop_read_us"))


def _preamble(res):
    m = res["machine"]
    where = (f"pools in {m['pool_dir']} ({m['pool_fs']}, disk-backed: two tiers, durable every 1 s)"
             if m["pool_disk_backed"] else
             f"pools in {m['pool_dir']} ({m['pool_fs']}, memory: commits pay no device flush)")
    load = (f"; load average {m['loadavg_1min_start']:.1f} at the start, {m['loadavg_1min_end']:.1f} at the end"
            if "loadavg_1min_end" in m else "")
    if "steal_percent" in m:
        load += f"; CPU time taken by the host (steal) during the run: {m['steal_percent']:.1f} %"
    long = f"; programs lengthened to about {res['seconds']:g} s natively" if res.get("seconds") else ""
    budget = res.get("max_overhead")
    budget = f"--max-overhead {budget}" if budget is not None else "the default budget"
    return (f"{m['nproc']} CPUs, Linux {m['kernel']}; {where}; interval {res['interval_ms']} ms, {budget}; "
            f"{res['reps']} repetition(s), interleaved round-robin{long}{load}")


def render_text(res):
    out = [f"prosper bench overhead: {_preamble(res)}"]
    for title, header, rows in tables(res):
        w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        out += ["", title, "  " + "  ".join(h.rjust(w[i]) if i else h.ljust(w[i]) for i, h in enumerate(header))]
        for row in rows:
            out.append("  " + "  ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i]) for i, c in enumerate(row)))
    s = res["summary"]
    out += ["", f"targets met: {s['met']} of {s['checked']}"]
    out += [f"FAILURE: {f}" for f in res["failures"]]
    return "\n".join(out)


def render_markdown(res):
    out = ["# Supervisor overhead", "",
           f"Produced by `{res['command']}` on {res['date']}. Every number below was measured in that run.", "",
           _preamble(res) + ".", "",
           "Slowdown = median supervised wall time / median native wall time - 1. Trackers: `page` (whole "
           "written pages), `diff` (the default: written pages filtered to changed 8 B stack granules and "
           "256 B granules of other memory), `full` (every page, every checkpoint). Stack bytes: page = "
           "bytes in the pages the page tracker named, 8 B diff = bytes written, exact = changed 8-byte words "
           "(all three from one run with `--exact-stack-stats`). Restore GB/s = restored bytes / the time "
           "the supervisor spent writing memory after a SIGKILL at half the native time (resume ms: relaunch "
           "until the program runs again). threads = threads per checkpoint; us/thread = time to capture one "
           "thread's registers, XSAVE state, mask and robust list (every thread is stopped for each "
           "checkpoint: the stop is the whole process's, not a context switch). Native spread = (slowest - "
           "fastest native run) / median: slowdowns smaller than it are within the machine's noise. `precopy`: "
           "the diff tracker with `--copy precopy` (docs/run-resume.md): KiB read stopped / pre-copied / read "
           "again are per checkpoint."]
    for title, header, rows in tables(res):
        out += ["", f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    s = res["summary"]
    out += ["", f"Targets met: {s['met']} of {s['checked']}."]
    if res["failures"]:
        out += ["", "Failures:", ""] + [f"- {f}" for f in res["failures"]]
    return "\n".join(out) + "\n"


def overhead(args):
    reps = 1 if args.quick else args.reps
    if reps < 1:
        die("bench: --reps must be at least 1")
    if args.seconds is not None and args.seconds <= 0:
        die("bench: --seconds must be positive")
    names = list(PROGRAMS)
    if args.programs:
        names = []
        for n in (x.strip() for x in args.programs.split(",") if x.strip()):
            for m in ALIASES.get(n, [n]):
                if m not in PROGRAMS:
                    die(f"bench: unknown program '{n}' (choose from {', '.join(PROGRAMS)}, recursive)")
                if m not in names:
                    names.append(m)
        if not names:
            die("bench: --programs is empty")
    pool_dir = args.pool_dir or ("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    if not os.path.isdir(pool_dir) or not os.access(pool_dir, os.W_OK):
        die(f"bench: --pool-dir {pool_dir}: not a writable directory")
    _supervisor()
    log = (lambda s: print(s, file=sys.stderr, flush=True))
    res = {"benchmark": "overhead",
           "command": (f"PROSPER_MAX_OVERHEAD={os.environ['PROSPER_MAX_OVERHEAD']} " if "PROSPER_MAX_OVERHEAD" in os.environ else "")
           + "prosper bench overhead" + (" --quick" if args.quick else f" --reps {reps}")
           + (f" --programs {args.programs}" if args.programs else "")
           + (f" --seconds {args.seconds:g}" if args.seconds else ""),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": machine(pool_dir), "interval_ms": INTERVAL_MS, "reps": reps, "seconds": args.seconds,
           # the runs' budget: $PROSPER_MAX_OVERHEAD when set (the supervisor's default), else 5
           "max_overhead": os.environ.get("PROSPER_MAX_OVERHEAD", "5"),
           "trackers": {"page": "page tracker, whole pages", "diff": "stack 8 B diff, other memory 256 B diff",
                        "full": "every page", "precopy": "diff, with --copy precopy"},
           "targets": TARGETS, "programs": [], "failures": []}
    log(f"prosper bench overhead: {len(names)} program(s), {reps} repetition(s), pools in {pool_dir}")

    def check(row):
        if row["resume_output_matches"]:
            return []
        return [f"after the kill and resume it printed {row['resume_output']!r}, "
                f"native printed {row['native_output']!r}"]
    measure_each(res, "programs", [(n, n) for n in names],
                 lambda n, tmp: measure_program(n, reps, tmp, log, args.seconds), check, pool_dir, log)
    checked = [t for r in res["programs"] for t in r["targets"].values() if t and t["met"] is not None]
    res["summary"] = {"checked": len(checked), "met": sum(1 for t in checked if t["met"]),
                      "not_met": sum(1 for t in checked if not t["met"])}
    return report(args, res, render_text(res), render_markdown)


def write_results(name, res, md):
    """A bench script's end: res as bench/results/NAME.json, the lines md (with res's failures
    listed) as NAME.md and on stdout; its exit code, 1 if a run failed.  NAME may be a path."""
    out_dir = os.path.join(ROOT, "bench", "results")
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(res, f, indent=1)
    if res["failures"]:
        md = md + ["", "Failures:", ""] + [f"- {x}" for x in res["failures"]]
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 1 if res["failures"] else 0


def report(args, res, text, markdown):
    """Print a benchmark's results (text, or JSON on stdout with the text on stderr), write the
    markdown(res) to --md, and give its exit code: 1 if a run failed."""
    if args.md:
        with open(args.md, "w") as f:
            f.write(markdown(res))
    if args.json:
        print(text, file=sys.stderr)
        print(json.dumps(res))
    else:
        print(text)
    return 1 if res["failures"] else 0


def _scale(args):
    from prosper.bench_scale import scale  # it builds on this module's runs
    return scale(args)


def _resume(args):
    from prosper.bench_resume import bench_resume  # it builds on this module's runs
    return bench_resume(args)


MODES = {"overhead": overhead, "scale": _scale, "resume": _resume}


def main(args):
    return MODES[args.mode](args)
