#!/usr/bin/env python3
"""What holding output until its checkpoint commits costs (docs/run-resume.md, "Output held until
its checkpoint commits"): each case natively, under `prosper run --external-sync on` (the default)
and `--external-sync off`, in one session, interleaved over the repetitions.  Writes
bench/results/external_sync.{json,md}.

    bench/scripts/external_sync.py [--reps R] [--mib M] [--lines N] [--requests Q] [--pool-dir DIR] [--name NAME]

Cases:
  pipe-4k     `dd bs=4k` of M MiB into a pipe read by `cat > /dev/null`: throughput (MB/s)
  pipe-lines  a shell loop printing N numbered lines (one write each) into a pipe: lines/s
  redis       a client's SET round trips to redis-server (persistence off), one after the other:
              median and 99th percentile latency per request
  terminal    an interactive program on a pseudo-terminal: the time from a line typed to its
              answer shown (median over the round trips)
"""
import argparse
import json
import os
import pty
import random
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import services  # noqa: E402  (the Redis client and free ports, shared with the e2e tests)

PROSPER = services.PROSPER
MODES = ("native", "on", "off")


def wrap(mode, pool, argv):
    if mode == "native":
        return list(argv)
    return [PROSPER, "run", "--max-overhead", "0", "--fresh", "--external-sync", mode, "--pool", pool, "--", *argv]


def pipe_case(mode, pool, argv, d):
    """Seconds of argv with its stdout into `cat > /dev/null`."""
    t = time.monotonic()
    p = subprocess.Popen(wrap(mode, pool, argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=d)
    c = subprocess.run(["cat"], stdin=p.stdout, stdout=subprocess.DEVNULL)
    p.stdout.close()
    rc = p.wait()
    dt = time.monotonic() - t
    if rc != 0 or c.returncode != 0:
        raise RuntimeError(f"{mode}: {argv[0]} exit {rc}")
    return dt


def redis_case(mode, pool, requests, d):
    """Per-request latencies (s) of `requests` SET round trips."""
    port = services.free_port()
    argv = ["/usr/bin/redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--dir", d]
    p = subprocess.Popen(wrap(mode, pool, argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d,
                         start_new_session=True)
    try:
        r = services.Resp(services.connect(port, time.monotonic() + 60))
        r.call("PING")
        lat = []
        for n in range(requests):
            t = time.monotonic()
            if r.call("SET", "k%d" % n, "v%d" % n) != b"OK":
                raise RuntimeError("SET not OK")
            lat.append(time.monotonic() - t)
        r.s.close()
        return lat
    finally:
        os.killpg(p.pid, 9)
        p.wait()


ASK = """import sys
while True:
    line = sys.stdin.readline()
    if not line or line.strip() == "quit":
        break
    sys.stdout.write("answer %s\\n" % line.strip()); sys.stdout.flush()
"""


def terminal_case(mode, pool, rounds, d):
    """Seconds from a line typed on a pseudo-terminal to its answer shown, per round."""
    prog = os.path.join(d, "ask.py")
    with open(prog, "w") as f:
        f.write(ASK)
    master, slave = pty.openpty()
    rng = random.Random(rounds)
    p = subprocess.Popen(wrap(mode, pool, [sys.executable, prog]), stdin=slave, stdout=slave, stderr=subprocess.DEVNULL,
                         cwd=d, start_new_session=True)
    out, lat = b"", []
    try:
        time.sleep(0.5)  # started, and (supervised) its first checkpoint taken
        for k in range(rounds):
            want = b"answer w%d\r\n" % k
            t = time.monotonic()
            os.write(master, b"w%d\n" % k)
            while want not in out:
                r, _, _ = select.select([master], [], [], 10)
                if not r:
                    raise RuntimeError(f"{mode}: no answer to w{k}")
                out += os.read(master, 65536)
            lat.append(time.monotonic() - t)
            time.sleep(rng.uniform(0.005, 0.03))  # typed at any phase of the checkpoint interval
        os.write(master, b"quit\n")
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
        os.close(master)
        os.close(slave)
    return lat


def fs_type(path):
    """The file system type of path (the longest mount point above it), for the record."""
    path, best, kind = os.path.realpath(path), "", "?"
    with open("/proc/self/mounts") as f:
        for line in f:
            mnt, typ = line.split()[1:3]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                best, kind = mnt, typ
    return kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--lines", type=int, default=300000)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--pool-dir", default="/dev/shm", help="where the pools go (a folder in the project: its disk)")
    ap.add_argument("--name", default="external_sync")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="prosper-xsync-")
    pool = os.path.join(os.path.abspath(a.pool_dir), "xsync-%d.prosper" % os.getpid())  # the runs start elsewhere
    counter = os.path.join(d, "counter.sh")
    with open(counter, "w") as f:
        f.write("#!/bin/sh\ni=0\nwhile [ $i -lt %d ]; do i=$((i+1)); echo $i; done\n" % a.lines)
    os.chmod(counter, 0o755)
    dd = ["dd", "if=/dev/zero", "bs=4k", "count=%d" % (a.mib * 256), "status=none"]
    raw = {m: {"pipe-4k": [], "pipe-lines": [], "redis": [], "terminal": []} for m in MODES}
    load = []
    try:
        for rep in range(a.reps):
            for m in MODES:
                raw[m]["pipe-4k"].append(pipe_case(m, pool, dd, d))
                raw[m]["pipe-lines"].append(pipe_case(m, pool, [counter], d))
                if os.access("/usr/bin/redis-server", os.X_OK):
                    raw[m]["redis"] += redis_case(m, pool, a.requests, d)
                raw[m]["terminal"] += terminal_case(m, pool, a.rounds, d)
            load.append(os.getloadavg()[0])
            print(f"repetition {rep + 1}/{a.reps} done, load {load[-1]:.2f}", file=sys.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        for suffix in ("", ".undo"):
            shutil.rmtree(pool + suffix, ignore_errors=True) if os.path.isdir(pool + suffix) else None
        if os.path.exists(pool):
            os.unlink(pool)

    def q(xs, f):
        return round(f(xs) * 1e3, 2) if xs else None

    res = {"made": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv), "reps": a.reps,
           "load_average": [round(x, 2) for x in load], "cpus": os.cpu_count(), "pool_dir": a.pool_dir,
           "pool_fs": fs_type(a.pool_dir), "modes": {}}
    for m in MODES:
        r = raw[m]
        res["modes"][m] = {
            "pipe_4k_mb_s": round(a.mib * 2**20 / 1e6 / statistics.median(r["pipe-4k"]), 1),
            "pipe_lines_per_s": round(a.lines / statistics.median(r["pipe-lines"])),
            "redis_median_ms": q(r["redis"], statistics.median),
            "redis_p99_ms": q(r["redis"], lambda x: sorted(x)[int(0.99 * (len(x) - 1))]),
            "terminal_median_ms": q(r["terminal"], statistics.median),
            "terminal_max_ms": q(r["terminal"], max),
        }
    out = os.path.join(ROOT, "bench", "results", a.name)
    with open(out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    rows = [("pipe, 4 KiB writes (MB/s)", "pipe_4k_mb_s"), ("pipe, a write per line (lines/s)", "pipe_lines_per_s"),
            ("Redis SET round trip, median (ms)", "redis_median_ms"), ("Redis SET round trip, p99 (ms)", "redis_p99_ms"),
            ("terminal: typed line to answer, median (ms)", "terminal_median_ms"),
            ("terminal: typed line to answer, max (ms)", "terminal_max_ms")]
    md = [f"# Output held until its checkpoint commits: what it costs\n",
          f"`{res['command']}` -- {res['made']}, {res['cpus']} CPUs, load average after each repetition "
          f"{', '.join(map(str, res['load_average']))}; pools in {a.pool_dir} ({res['pool_fs']}); interval 10 ms; "
          f"{a.reps} repetitions, "
          f"interleaved (medians).\n",
          "| case | native | --external-sync on | --external-sync off |", "|---|---|---|---|"]
    for label, key in rows:
        md.append(f"| {label} | " + " | ".join(str(res['modes'][m][key]) for m in MODES) + " |")
    md.append("\nA pipe is read through a pipe of ours (no stop per write); a terminal's and a socket's writes "
              "stop in the supervisor; every reply or answer waits for the next cut's commit.")
    with open(out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
