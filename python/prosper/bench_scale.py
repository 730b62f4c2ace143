"""bench_scale -- `prosper bench scale`: does checkpointing hold for programs of several GiB?

For each size (MiB), build/bench/scale maps that much memory, fills it, then writes 8-byte words
at random all over it for about --seconds s (the count of writes is calibrated by a native probe
at that size).  Measured, one run each: the native wall time; a supervised run at 10 ms (the
default tracker and copy mode) -- its slowdown, checkpoints per second of its wall time, late
ticks, mean and longest stop; the same with --copy precopy; and a run killed with SIGKILL at half the native time (after its
first checkpoint committed) and resumed -- relaunch time, restore GB/s, and whether it printed
what the native run printed.

A size the machine cannot hold is not run and says why: the program, the pool's data (up to
twice the written memory: the commit keeps the previous copy of what it replaces) and the
supervisor's copy of a stop's written memory all live in memory (the pool in /dev/shm, or its
fast tier there), about 4x the size; a size whose 4x exceeds MemAvailable is left out.

Targets (issue: programs of several GiB keep the stop bounds): longest stop <= 2 ms including the
first checkpoint; the output after kill and resume equals the native output."""
import os
import sys
import tempfile
import time

from prosper.cmd_bench import TARGETS, machine, measure_each, report, run_kill_resume, run_native, run_supervised
from prosper.paths import BUILD, die

SIZES_MIB = [512, 1024, 2048, 4096, 8192]
QUICK_SIZES_MIB = [64, 128]
MAX_STOP_MS = TARGETS["max_stop_ms"]
PROBE_WRITES = 20_000_000
MEMORY_FACTOR = 4


def mem_available():
    """MemAvailable in bytes (/proc/meminfo), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def calibrated_writes(prog, mib, seconds):
    """The count of writes that takes about `seconds` natively at this size: a run with no write
    gives the fill's time, a probe of PROBE_WRITES the rate."""
    t_fill, _ = run_native([prog, str(mib), "0"])
    probe = min(PROBE_WRITES, max(1_000_000, int(PROBE_WRITES * seconds / 4)))
    t_probe, _ = run_native([prog, str(mib), str(probe)])
    rate = probe / max(t_probe - t_fill, 1e-3)
    return max(1, int(rate * seconds))


def measure_size(prog, mib, seconds, tmp, log):
    capacity = max(8192, 3 * mib)  # MiB of pool data: the written memory twice, and room
    extra = ("--capacity", str(capacity))
    writes = calibrated_writes(prog, mib, seconds)
    argv = [prog, str(mib), str(writes)]
    native_s, expect = run_native(argv)
    log(f"  {mib} MiB: {writes} writes, native {native_s:.2f} s")
    wall, st = run_supervised(argv, tmp, f"scale-{mib}", "diff", expect, extra)
    n = st.get("checkpoints", 0)
    log(f"  {mib} MiB: supervised {wall:.2f} s, {n} checkpoints, max stop {st.get('max_stop_ms', 0):.1f} ms")
    wall_pre, st_pre = run_supervised(argv, tmp, f"scale-{mib}-precopy", "diff", expect, extra + ("--copy", "precopy"))
    log(f"  {mib} MiB: with --copy precopy {wall_pre:.2f} s, max stop {st_pre.get('max_stop_ms', 0):.1f} ms")
    kill = run_kill_resume(argv, tmp, f"scale-{mib}-kill", native_s / 2, expect, extra)
    mem_s = kill.get("restore_memory_seconds") or 0
    row = {"mib": mib, "writes": writes, "native_s": native_s, "supervised_s": wall,
           "slowdown": wall / native_s - 1, "checkpoints": n, "checkpoints_per_s": n / wall if wall else 0,
           "late": st.get("late", 0), "mean_stop_ms": st.get("mean_stop_ms", 0),
           "max_stop_ms": st.get("max_stop_ms", 0), "stop_read_mib_per_ckpt":
           st.get("stop_read_bytes", 0) / n / 2**20 if n else 0,
           "dense_region_switches": st.get("dense_region_switches", 0),
           "killed_at_s": kill["killed_at_s"], "resume_ms": 1000 * kill.get("restore_seconds", 0),
           "restored_mib": kill.get("restored_bytes", 0) / 2**20,
           "restore_gbps": kill.get("restored_bytes", 0) / mem_s / 1e9 if mem_s else None,
           "resume_output_matches": kill["output_matches"]}
    n_pre = st_pre.get("checkpoints", 0)
    row["precopy"] = {"supervised_s": wall_pre, "slowdown": wall_pre / native_s - 1, "checkpoints": n_pre,
                      "checkpoints_per_s": n_pre / wall_pre if wall_pre else 0,
                      "mean_stop_ms": st_pre.get("mean_stop_ms", 0), "max_stop_ms": st_pre.get("max_stop_ms", 0),
                      "precopy_mib_per_ckpt": st_pre.get("precopy_bytes", 0) / n_pre / 2**20 if n_pre else 0}
    row["max_stop_met"] = row["max_stop_ms"] <= MAX_STOP_MS
    log(f"  {mib} MiB: killed at {row['killed_at_s']:.2f} s, resumed in {row['resume_ms']:.1f} ms, output "
        + ("same" if row["resume_output_matches"] else "WRONG"))
    return row


def scale(args):
    sizes = QUICK_SIZES_MIB if args.quick else SIZES_MIB
    if args.sizes:
        try:
            sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
        except ValueError:
            die(f"bench: --sizes {args.sizes!r}: a comma-separated list of MiB")
        if not sizes or min(sizes) < 1:
            die("bench: --sizes: sizes are positive MiB")
    seconds = args.seconds if args.seconds is not None else (1.0 if args.quick else 4.0)
    if seconds <= 0:
        die("bench: --seconds must be positive")
    prog = os.path.join(BUILD, "bench", "scale")
    if not os.access(prog, os.X_OK):
        die("bench: build/bench/scale is not built (make build)")
    pool_dir = args.pool_dir or ("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    if not os.path.isdir(pool_dir) or not os.access(pool_dir, os.W_OK):
        die(f"bench: --pool-dir {pool_dir}: not a writable directory")
    log = (lambda s: print(s, file=sys.stderr, flush=True))
    res = {"benchmark": "scale",
           "command": "prosper bench scale" + (" --quick" if args.quick else "")
           + (f" --sizes {args.sizes}" if args.sizes else "") + (f" --seconds {args.seconds:g}" if args.seconds else ""),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(pool_dir),
           "interval_ms": 10, "seconds": seconds, "max_stop_ms_target": MAX_STOP_MS,
           "mem_total": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
           "sizes": [], "not_run": [], "failures": []}
    log(f"prosper bench scale: sizes {', '.join(map(str, sizes))} MiB, ~{seconds:g} s of writes, pools in {pool_dir}")

    def measure(mib, tmp):
        avail = mem_available()
        need = MEMORY_FACTOR * (mib << 20)
        if avail is not None and need > avail:
            res["not_run"].append({"mib": mib, "reason": f"needs about {need / 2**30:.0f} GiB of memory "
                                   f"({MEMORY_FACTOR}x the size), MemAvailable {avail / 2**30:.1f} GiB"})
            log(f"  {mib} MiB: not run: {res['not_run'][-1]['reason']}")
            return None
        return measure_size(prog, mib, seconds, tmp, log)

    measure_each(res, "sizes", [(mib, f"{mib} MiB") for mib in sizes], measure,
                 lambda row: [] if row["resume_output_matches"] else
                 ["the resumed run's output differs from the native one"], pool_dir, log)
    return report(args, res, render(res, markdown=False), lambda r: render(r, markdown=True))


HEADER = ["MiB", "native s", "supervised s", "slowdown", "checkpoints", "ckpt/s", "late", "mean stop ms",
          "max stop ms", f"max stop <= {MAX_STOP_MS:g} ms", "MiB read stopped/ckpt", "kill at s", "resume ms",
          "restored MiB", "restore GB/s", "resumed output"]
PRECOPY_HEADER = ["MiB", "stop: supervised s", "slowdown", "ckpt/s", "max stop ms", "precopy: supervised s", "slowdown",
                  "ckpt/s", "mean stop ms", "max stop ms", "MiB pre-copied/ckpt"]


def _row(r):
    return [str(r["mib"]), f"{r['native_s']:.2f}", f"{r['supervised_s']:.2f}", f"{100 * r['slowdown']:+.0f}%",
            str(r["checkpoints"]), f"{r['checkpoints_per_s']:.1f}", str(r["late"]), f"{r['mean_stop_ms']:.1f}",
            f"{r['max_stop_ms']:.1f}", "met" if r["max_stop_met"] else "NOT met", f"{r['stop_read_mib_per_ckpt']:.1f}",
            f"{r['killed_at_s']:.2f}", f"{r['resume_ms']:.1f}", f"{r['restored_mib']:.0f}",
            "-" if r["restore_gbps"] is None else f"{r['restore_gbps']:.2f}",
            "same" if r["resume_output_matches"] else "WRONG"]


def _precopy_row(r):
    p = r["precopy"]
    return [str(r["mib"]), f"{r['supervised_s']:.2f}", f"{100 * r['slowdown']:+.0f}%", f"{r['checkpoints_per_s']:.1f}",
            f"{r['max_stop_ms']:.1f}", f"{p['supervised_s']:.2f}", f"{100 * p['slowdown']:+.0f}%",
            f"{p['checkpoints_per_s']:.1f}", f"{p['mean_stop_ms']:.1f}", f"{p['max_stop_ms']:.1f}",
            f"{p['precopy_mib_per_ckpt']:.1f}"]


def render(res, markdown):
    m = res["machine"]
    load = (f"load average {m['loadavg_1min_start']:.1f} at the start, {m.get('loadavg_1min_end', 0):.1f} at the end"
            + (f", steal {m['steal_percent']:.1f} %" if "steal_percent" in m else ""))
    facts = (f"{m['nproc']} CPUs, {res['mem_total'] / 2**30:.0f} GiB of memory, Linux {m['kernel']}; pools in "
             f"{m['pool_dir']} ({m['pool_fs']}); interval {res['interval_ms']} ms, default tracker; "
             f"~{res['seconds']:g} s of random writes after the fill; {load}")
    tables = [("Checkpoints, stops and a kill (default copy mode: stop)", HEADER, [_row(r) for r in res["sizes"]]),
              ("The two copy modes side by side (--copy stop, --copy precopy)", PRECOPY_HEADER,
               [_precopy_row(r) for r in res["sizes"]])]
    not_run = [f"{n['mib']} MiB: not run: {n['reason']}" for n in res["not_run"]]
    if markdown:
        out = ["# Scale: programs of several GiB written all over", "",
               f"Produced by `{res['command']}` on {res['date']}. Every number below was measured in that run "
               "(one run of each kind per size).", "", facts + ".", "",
               "`build/bench/scale MIB WRITES` fills MIB MiB, then writes 8-byte words at random offsets all over "
               "it; WRITES is calibrated so that the writes take about the stated time natively. ckpt/s = "
               "checkpoints / supervised wall time (100 would be every tick). MiB read stopped/ckpt: written "
               "memory read while the program was stopped, per checkpoint. The kill is a SIGKILL of the process "
               "group at half the native time (after the first checkpoint committed); restore GB/s = restored "
               "bytes / the time spent writing them. MiB pre-copied/ckpt: read by the pass before each stop "
               "while the program ran (docs/run-resume.md, \"When the written memory is read\")."]
        for title, header, rows in tables:
            out += ["", f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            out += ["| " + " | ".join(r) + " |" for r in rows]
        out += [""] + [f"- {n}" for n in not_run] if not_run else []
        if res["failures"]:
            out += ["", "Failures:", ""] + [f"- {f}" for f in res["failures"]]
        return "\n".join(out) + "\n"
    out = [f"prosper bench scale: {facts}"]
    for title, header, rows in tables:
        w = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        out += ["", title, "  " + "  ".join(h.rjust(w[i]) for i, h in enumerate(header))]
        out += ["  " + "  ".join(c.rjust(w[i]) for i, c in enumerate(r)) for r in rows]
    out += [f"  {n}" for n in not_run]
    out += [f"FAILURE: {f}" for f in res["failures"]]
    return "\n".join(out)
