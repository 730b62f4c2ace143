#!/usr/bin/env python3
"""file_undo.py [--reps 3] [--pool-dir DIR] [--quick]

What seeing and recording the program's file changes costs (docs/run-resume.md, "Files"): three
programs that change files -- the sqlite3 shell loading transactions into a database with a
rollback journal, `make -j2` of a C project, a log appender that opens, appends and closes -- and
one that only prints, a line and a flush at a time (its stdout is /dev/null here, as every
program's) -- each run natively, under `prosper run` without the file filter (the test hook
PROSPER_TEST_NO_FILE_FILTER=1: the supervisor as it was before the journal, checkpoints and all),
and under `prosper run` as shipped.  Round robin over the three ways, --reps times; the median
wall time of each, the ratios, and from the supervised run's --stats-json where the time went:
calls the filter sent (file_calls_seen), journal records and bytes, the time spent recording
(file_tracking_ms).  The pool is on the project's own file system unless --pool-dir says
otherwise (two tiers: checkpoints in memory, durable every second), and the load average is
printed with the numbers.  Writes bench/results/file_undo.{json,md}.  Not a test: the numbers
depend on the machine and its load."""
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
PROSPER = os.path.join(ROOT, "bin", "prosper")


def sqlite_workload(d, n):
    lines = ["PRAGMA journal_mode=delete;", "CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER);"]
    for i in range(n):
        lines.append(f"BEGIN; INSERT INTO t(k, v) VALUES ('{i % 7}', {i}); "
                     f"UPDATE t SET v = v + 1 WHERE id % 5 = {i % 5}; COMMIT;")
    lines.append("SELECT count(*), sum(v) FROM t;")
    with open(os.path.join(d, "load.sql"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return ["/usr/bin/sqlite3", "data.db", f".read {d}/load.sql"], "rm -f data.db data.db-journal"


def make_workload(d, n):
    src = os.path.join(d, "proj")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "f.h"), "w") as f:
        f.write("".join(f"int f{i}(int);\n" for i in range(n)))
    for i in range(n):
        with open(os.path.join(src, f"f{i}.c"), "w") as f:
            f.write(f'#include "f.h"\nint f{i}(int x) {{ return x * {i + 1}; }}\n')
    with open(os.path.join(src, "main.c"), "w") as f:
        f.write('#include <stdio.h>\n#include "f.h"\nint main(void) { printf("%d\\n", '
                + " + ".join(f"f{i}(1)" for i in range(n)) + "); return 0; }\n")
    objs = " ".join(f"f{i}.o" for i in range(n))
    with open(os.path.join(src, "Makefile"), "w") as f:
        f.write(f"prog: main.o {objs}\n\tcc -o $@ $^\n%.o: {src}/%.c {src}/f.h\n\tcc -O1 -c -o $@ $<\n")
    return ["/usr/bin/make", "-s", "-j2", "-f", os.path.join(src, "Makefile")], "rm -f *.o prog"


def appender_workload(d, n):
    prog = os.path.join(d, "appender.py")
    with open(prog, "w") as f:
        f.write(f"""import os
for i in range({n}):
    fd = os.open("log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"%d a line of the log of some length\\n" % i)
    os.close(fd)
""")
    return ["/usr/bin/python3", "-S", prog], "rm -f log"


def printer_workload(d, n):
    prog = os.path.join(d, "printer.py")
    with open(prog, "w") as f:
        f.write(f"""import sys
for i in range({n}):
    sys.stdout.write("%d a line of output\\n" % i)
    sys.stdout.flush()
""")
    return ["/usr/bin/python3", "-S", prog], "true"


def timed(cmd, cwd, env=None):
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"file_undo: {' '.join(cmd[:4])} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pool-dir", default=None, help="where the pools go (default: under bench/, the project's file system)")
    ap.add_argument("--quick", action="store_true", help="smaller programs, one repetition")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    a = ap.parse_args()
    reps = 1 if a.quick else a.reps
    scale = 0.25 if a.quick else 1.0
    base = tempfile.mkdtemp(prefix="file-undo-", dir=os.path.join(ROOT, "bench"))
    pool_dir = a.pool_dir or base
    work = os.path.join(base, "w")
    os.mkdir(work)
    workloads = [("sqlite3 shell, rollback journal", sqlite_workload(base, int(2000 * scale))),
                 ("make -j2", make_workload(base, int(120 * scale))),
                 ("log appender (open, append, close)", appender_workload(base, int(20000 * scale))),
                 ("printer (a line at a time to stdout)", printer_workload(base, int(100000 * scale)))]
    rows = []
    load_before = os.getloadavg()
    try:
        for name, (cmd, clean) in workloads:
            times = {"native": [], "without_filter": [], "with_filter": []}
            stats = None
            for _ in range(reps):
                for way in times:
                    subprocess.run(clean, shell=True, cwd=work, check=True)
                    pool = os.path.join(pool_dir, "b.prosper")
                    st_path = os.path.join(base, "st.json")
                    if way == "native":
                        times[way].append(timed(cmd, work))
                        continue
                    env = dict(os.environ)
                    if way == "without_filter":
                        env["PROSPER_TEST_NO_FILE_FILTER"] = "1"
                    sup = [PROSPER, "run", "--max-overhead", "0", "--fresh", "--pool", pool, "--stats-json", st_path, "--", *cmd]
                    times[way].append(timed(sup, work, env))
                    if way == "with_filter":
                        with open(st_path) as f:
                            stats = json.load(f)
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append({
                "program": name, "reps": reps, "seconds": med,
                "overhead_without_filter": med["without_filter"] / med["native"],
                "overhead_with_filter": med["with_filter"] / med["native"],
                "filter_over_without": med["with_filter"] / med["without_filter"],
                "file_calls_seen": stats["file_calls_seen"], "file_undo_records": stats["file_undo_records"],
                "file_undo_bytes": stats["file_undo_bytes"], "file_tracking_ms": stats["file_tracking_ms"],
                "file_journal_flushes": stats["file_journal_flushes"],
                "file_journal_flush_ms": stats["file_journal_flush_ms"],
                "us_per_call_seen": (1e6 * (med["with_filter"] - med["without_filter"]) / stats["file_calls_seen"]
                                     if stats["file_calls_seen"] else None),
                "checkpoints": stats["checkpoints"]})
            r = rows[-1]
            print(f"{name}: native {med['native']:.3f} s, without the filter {med['without_filter']:.3f} s "
                  f"({r['overhead_without_filter']:.2f}x), with it {med['with_filter']:.3f} s "
                  f"({r['overhead_with_filter']:.2f}x native, {r['filter_over_without']:.2f}x without); "
                  f"{r['file_calls_seen']} calls seen, {r['file_undo_records']} records, "
                  f"{r['file_undo_bytes'] / 2**20:.1f} MiB journal, {r['file_tracking_ms']:.0f} ms recording "
                  f"(of it {r['file_journal_flushes']} journal flushes, {r['file_journal_flush_ms']:.0f} ms); "
                  + (f"{r['us_per_call_seen']:.0f} us more per call seen" if r['us_per_call_seen'] is not None
                     else "no call seen"), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    res = {"benchmark": "file_undo", "command": "bench/scripts/file_undo.py" + (" --quick" if a.quick else f" --reps {reps}"),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "pool_dir": a.pool_dir or "bench/ (the project's file system)", "loadavg_before": load_before,
           "loadavg_after": os.getloadavg(), "nproc": os.cpu_count(), "rows": rows}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "file_undo.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out, "file_undo.md"), "w") as f:
        f.write(f"# What seeing and recording file changes costs\n\n`{res['command']}`, {res['date']}, "
                f"{res['nproc']} cores, load average {load_before[0]:.2f} before / {res['loadavg_after'][0]:.2f} after; "
                f"pools in {res['pool_dir']}.\n\n"
                "| program | native s | without filter s | with filter s | with / native | with / without | "
                "calls seen | us more per call | records | journal MiB | recording ms | of it: flushes | flush ms |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            s = r["seconds"]
            f.write(f"| {r['program']} | {s['native']:.3f} | {s['without_filter']:.3f} | {s['with_filter']:.3f} | "
                    f"{r['overhead_with_filter']:.2f} | {r['filter_over_without']:.2f} | {r['file_calls_seen']} | "
                    f"{'-' if r['us_per_call_seen'] is None else format(r['us_per_call_seen'], '.0f')} | {r['file_undo_records']} | {r['file_undo_bytes'] / 2**20:.1f} | "
                    f"{r['file_tracking_ms']:.0f} | {r['file_journal_flushes']} | {r['file_journal_flush_ms']:.0f} |\n")
    print(f"wrote {a.out}/file_undo.json and file_undo.md")


if __name__ == "__main__":
    main()
