"""bench_resume -- `prosper bench resume`: how soon a killed program runs again, lazy vs eager.

For each program: a native run for the reference output; a supervised run (10 ms, default
tracker) killed with SIGKILL at half the native time, after its first checkpoint committed; then
the same checkpoint resumed --reps times with --restore lazy and --restore eager, interleaved (the
pool and the output file are copied aside after the kill and put back before every resume, so
every resume starts from the same bytes).  Per resume, from its --stats-json: restore_seconds
(relaunch to running), resume_command_seconds (the command's start to running: the pool's
checks too), restore_memory_seconds (the memory writes; lazy: from the first page to the last,
the program running meanwhile), restored bytes, the pages the program touched before they were
back, the first checkpoint's stop, and whether the output equals the native one.

Targets (issue: lazy resume): relaunch to running <= 5 ms for pr, sssp and kv; full restore
>= 4 GB/s."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from prosper.cmd_bench import (MEMORY_FS, PROGRAMS, TARGETS, _remove_pool, _supervisor, fs_type, machine,
                               measure_each, report, resume_once, run_and_kill, run_native)
from prosper.paths import BUILD, die

DEFAULT_PROGRAMS = ["pr", "sssp", "kv"]
MODES = ("lazy", "eager")
RUNNING_MS_TARGET = TARGETS["resume_ms"]
RESTORE_GBPS_TARGET = TARGETS["restore_gbps"]


def _copy(src, dst):
    # the pool file is sparse (GiB of capacity, MiB used): a plain copy would write every hole
    subprocess.run(["cp", "--sparse=always", src, dst], check=True)


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if not n else xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def measure_program(name, reps, tmp, log):
    rel, _ = PROGRAMS[name]
    argv = [os.path.join(BUILD, "bench", rel[0])] + rel[1:]
    native_s, expect = run_native(argv)
    pool, out, stats = (os.path.join(tmp, f"{name}.pool"), os.path.join(tmp, f"{name}.out"),
                        os.path.join(tmp, f"{name}.stats.json"))
    try:
        killed_at = run_and_kill(argv, pool, out, native_s / 2)
        _copy(pool, pool + ".kept")
        shutil.copytree(pool + ".undo", pool + ".undo.kept")  # the file-undo journal goes with the pool
        shutil.copy2(out, out + ".kept")  # its modification time too: a resume compares it
        runs = {m: [] for m in MODES}
        for rep in range(reps):
            for mode in MODES:
                _copy(pool + ".kept", pool)
                shutil.rmtree(pool + ".undo", ignore_errors=True)
                shutil.copytree(pool + ".undo.kept", pool + ".undo")
                shutil.copy2(out + ".kept", out)
                st = resume_once(name, pool, out, stats, expect, ("--restore", mode))
                mem = st.get("restore_memory_seconds") or 0
                runs[mode].append({
                    "running_ms": 1000 * st["restore_seconds"],
                    "command_ms": 1000 * st.get("resume_command_seconds", 0),
                    "memory_ms": 1000 * mem,
                    "restored_mib": st.get("restored_bytes", 0) / 2**20,
                    "restore_gbps": st.get("restored_bytes", 0) / mem / 1e9 if mem else None,
                    "lazy": bool(st.get("restore_lazy")),
                    "fill_faults": st.get("restore_fill_faults", 0),
                    "max_stop_ms": st.get("max_stop_ms", 0),
                    "checkpoints": st.get("checkpoints", 0),
                    "output_matches": st["output_matches"]})
                r = runs[mode][-1]
                log(f"  {name} {mode} #{rep + 1}: running after {r['running_ms']:.2f} ms "
                    f"(command {r['command_ms']:.2f} ms), memory {r['memory_ms']:.1f} ms, "
                    f"{r['fill_faults']} pages touched first, output " + ("same" if r["output_matches"] else "WRONG"))
    finally:
        _remove_pool(pool)
        for f in (out, out + ".kept", stats):
            if os.path.exists(f):
                os.unlink(f)
    row = {"program": name, "argv": [os.path.basename(argv[0])] + argv[1:], "native_s": native_s,
           "killed_at_s": killed_at, "runs": runs}
    for mode in MODES:
        rs = runs[mode]
        row[mode] = {k: _median([r[k] for r in rs if r[k] is not None])
                     for k in ("running_ms", "command_ms", "memory_ms", "restored_mib", "restore_gbps",
                               "fill_faults", "max_stop_ms")}
        row[mode]["lazy_runs"] = sum(r["lazy"] for r in rs)
        row[mode]["outputs_same"] = all(r["output_matches"] for r in rs)
    lz = row["lazy"]
    row["running_met"] = lz["running_ms"] is not None and lz["running_ms"] <= RUNNING_MS_TARGET
    row["restore_met"] = lz["restore_gbps"] is not None and lz["restore_gbps"] >= RESTORE_GBPS_TARGET
    return row


def bench_resume(args):
    names = [n.strip() for n in args.programs.split(",")] if args.programs else DEFAULT_PROGRAMS
    for n in names:
        if n not in PROGRAMS:
            die(f"bench: unknown program '{n}' (choose from {', '.join(PROGRAMS)})")
    reps = 1 if args.quick else args.reps
    if reps < 1:
        die("bench: --reps must be at least 1")
    pool_dir = args.pool_dir or ("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    if not os.path.isdir(pool_dir) or not os.access(pool_dir, os.W_OK):
        die(f"bench: --pool-dir {pool_dir}: not a writable directory")
    if fs_type(pool_dir) not in MEMORY_FS:
        # on a disk a pool has a second, fast tier in memory that the copies would not bring back
        die(f"bench: resume: --pool-dir {pool_dir} is on a disk; this benchmark copies the pool between "
            "resumes and needs it on a memory file system (e.g. /dev/shm)")
    _supervisor()
    log = (lambda s: print(s, file=sys.stderr, flush=True))
    res = {"benchmark": "resume",
           "command": "prosper bench resume" + (" --quick" if args.quick else f" --reps {reps}")
           + (f" --programs {args.programs}" if args.programs else ""),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(pool_dir),
           "reps": reps, "running_ms_target": RUNNING_MS_TARGET, "restore_gbps_target": RESTORE_GBPS_TARGET,
           "programs": [], "failures": []}
    log(f"prosper bench resume: {', '.join(names)}, {reps} resume(s) each way, pools in {pool_dir}")
    measure_each(res, "programs", [(n, n) for n in names], lambda n, tmp: measure_program(n, reps, tmp, log),
                 lambda row: [f"a {mode} resume's output differs from the native one" for mode in MODES
                              if not row[mode]["outputs_same"]], pool_dir, log)
    return report(args, res, render(res, markdown=False), lambda r: render(r, markdown=True))


HEADER = ["program", "killed at s", "running after ms: lazy", "eager", "command to running ms: lazy", "eager",
          "memory back ms: lazy", "eager", "restored MiB: lazy", "eager", "restore GB/s: lazy", "eager",
          "pages touched first", "longest stop ms: lazy", "eager", "lazy resumes", "output",
          f"running <= {RUNNING_MS_TARGET:g} ms", f"restore >= {RESTORE_GBPS_TARGET:g} GB/s"]


def _f(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def _row(r, reps):
    lz, eg = r["lazy"], r["eager"]
    return [r["program"], f"{r['killed_at_s']:.2f}", _f(lz["running_ms"]), _f(eg["running_ms"]),
            _f(lz["command_ms"]), _f(eg["command_ms"]), _f(lz["memory_ms"], "{:.1f}"), _f(eg["memory_ms"], "{:.1f}"),
            _f(lz["restored_mib"], "{:.1f}"), _f(eg["restored_mib"], "{:.1f}"), _f(lz["restore_gbps"]),
            _f(eg["restore_gbps"]), _f(lz["fill_faults"], "{:.0f}"), _f(lz["max_stop_ms"], "{:.1f}"),
            _f(eg["max_stop_ms"], "{:.1f}"), f"{lz['lazy_runs']} of {reps}",
            "same" if lz["outputs_same"] and eg["outputs_same"] else "WRONG",
            "met" if r["running_met"] else "NOT met", "met" if r["restore_met"] else "NOT met"]


def render(res, markdown):
    m = res["machine"]
    load = (f"load average {m['loadavg_1min_start']:.1f} at the start, {m.get('loadavg_1min_end', 0):.1f} at the end"
            + (f", steal {m['steal_percent']:.1f} %" if "steal_percent" in m else ""))
    facts = (f"{m['nproc']} CPUs, Linux {m['kernel']}; pools in {m['pool_dir']} ({m['pool_fs']}); interval 10 ms, "
             f"default tracker; medians of {res['reps']} resume(s) each way, interleaved; {load}")
    rows = [_row(r, res["reps"]) for r in res["programs"]]
    if markdown:
        out = ["# Resume: how soon a killed program runs again (--restore lazy vs eager)", "",
               f"Produced by `{res['command']}` on {res['date']}. Every number below was measured in that run.",
               "", facts + ".", "",
               "One supervised run per program, killed with SIGKILL at half its native time; its checkpoint "
               "resumed again and again from a copy, both ways in turn. Running after: relaunch until the "
               "program runs (`restore_seconds`); command to running: from the resume command's start, the "
               "pool's checks included. Memory back: the memory writes (lazy: from the first page to the last, "
               "while the program runs). Pages touched first: pages the program touched before they were "
               "back, each answered at once. Longest stop: of the resumed run, its first checkpoint's included "
               "(lazy: that stop also ends the fill; docs/run-resume.md). Lazy resumes: how many resumes "
               "asked for lazy ran lazily (a program with no private memory of its own to fill runs eager)."]
        out += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        if res["failures"]:
            out += ["", "Failures:", ""] + [f"- {f}" for f in res["failures"]]
        return "\n".join(out) + "\n"
    w = [max(len(str(x)) for x in col) for col in zip(HEADER, *rows)]
    out = [f"prosper bench resume: {facts}", "  " + "  ".join(h.rjust(w[i]) for i, h in enumerate(HEADER))]
    out += ["  " + "  ".join(c.rjust(w[i]) for i, c in enumerate(r)) for r in rows]
    out += [f"FAILURE: {f}" for f in res["failures"]]
    return "\n".join(out)
