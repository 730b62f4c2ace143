#!/usr/bin/env python3
"""Programs started the way people start them, each killed with SIGKILL at random instants and
resumed by `prosper torture` until it ends; identical = stdout, exit code and every output file
equal to a native run.  Writes bench/results/programs_as_started.{json,md}.

    bench/scripts/programs_as_started.py [--kills N] [--only NAME]

The programs are the ones the e2e tests torture (tests/e2e/programs.py; there with assertions,
here the numbers are kept).  `lockowner plain --host-pids` is the fallback
without a pid namespace of the program's own: it is expected to time out (docs/limitations.md).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROSPER = os.path.join(ROOT, "bin", "prosper")
BUILD = os.environ.get("PROSPER_BUILD", os.path.join(ROOT, "build"))
PATH = "/usr/bin:/bin"

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import programs  # noqa: E402  (the programs, shared with the e2e tests)


def cases(d):
    """(name, argv, extra torture options, PATH)"""
    shim, shim_path = programs.pyenv_shim(d, PATH)
    sup = f"{BUILD}/tests/supervisor"
    return [
        ("#!/usr/bin/env python3 script", programs.env_python_script(d), [], PATH),
        ("#!/usr/bin/env sh script", programs.env_sh_script(d), [], PATH),
        ("env VAR=x python3", programs.env_with_variable(d), [], PATH),
        ("env -i python3", programs.env_dash_i(d), [], PATH),
        ("pyenv-style shim on PATH", shim, [], shim_path),
        ("launcher script that execs", programs.launcher(d), [], PATH),
        ("python: subprocess.run + os.system", programs.phases(d), [], PATH),
        ("sh loop over gzip (5 x 3 MiB)", programs.compress_loop(d), [], PATH),
        ("sh loop that runs expr every round (700 vfork + exec)", programs.exec_loop(d), [], PATH),
        ("3-stage pipeline x3 (python | tr | gzip)", programs.pipeline(d), [], PATH),
        ("slow pipeline, bytes in flight (sh: python | awk | gzip)", programs.slow_pipeline(d), [], PATH),
        ("python: parent and child over a full pipe", programs.pipe_in_flight(d), [], PATH),
        ("python: parent kills and waits for its workers by pid", programs.kill_and_wait(d), [], PATH),
        ("python: a server and its workers over a named unix socket", programs.unix_server(d), [], PATH),
        ("python: a group leader, a session leader, a member moved into a group", programs.groups(d), [], PATH),
        ("python: parent and child over a socketpair", programs.socketpair_talk(d), [], PATH),
        ("python: datagram and seqpacket socketpairs, messages in flight", programs.message_pairs(d), [], PATH),
        ("python: multiprocessing (fork): Pool, Value, Queue, shared page", programs.multiprocessing_fork(d), [], PATH),
        ("python: children that end long before their parent waits", programs.late_wait(d), [], PATH),
        ("python: an orphan (its parent exited) works on", programs.orphan(d), [], PATH),
        ("python: a socket whose peer ended, read later", programs.socket_after_peer_exit(d), [], PATH),
        ("python: a named pipe (FIFO) between parent and child", programs.fifo_pair(d), [], PATH),
        ("python self-pipe", programs.selfpipe(d), [], PATH),
        ("dlopen in a slow constructor", [f"{sup}/dlopener", f"{sup}/libslowinit.so", "8"], [], PATH),
        ("python: periodic setitimer + alarm, waited in pause()", programs.timers(d), [], PATH),
        ("signals pending across checkpoints (pendsig 8)", [f"{sup}/pendsig", "8"], [], PATH),
        ("python: lowered RLIMIT_NOFILE hit each phase", programs.limits(d), [], PATH),
        ("error-checking mutexes held (own ids)", [f"{sup}/lockowner", "6", "plain"], [], PATH),
        ("error-checking mutexes held (--host-pids)", [f"{sup}/lockowner", "6", "plain"],
         ["--host-pids", "--timeout", "60"], PATH),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--only", help="run the cases whose name contains this (nothing is written)")
    ap.add_argument("--pool-dir", help="where the pools live (torture's default: /dev/shm); e.g. a disk")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="prosper-started-") as d:
        for name, prog, extra, path in cases(d):
            if args.only and args.only not in name:
                continue
            opts = ["--kills", str(args.kills), "--json"] + (extra if "--timeout" in extra else extra + ["--timeout", "300"])
            if args.pool_dir:
                opts += ["--pool-dir", args.pool_dir]
            t = time.monotonic()
            r = subprocess.run([PROSPER, "torture", *opts, "--", *prog], capture_output=True, text=True, cwd=d,
                               env=dict(os.environ, PATH=path))
            try:
                res = json.loads(r.stdout)
            except ValueError:
                res = {"error": (r.stderr or r.stdout).strip()[-300:]}
            res["case"], res["seconds"] = name, round(time.monotonic() - t, 1)
            # the results name no path of this machine
            res["program"] = [a.replace(d, "$WORK").replace(BUILD, "$BUILD") for a in prog]
            res["load"] = os.getloadavg()[0]
            rows.append(res)
            print(f"{name}: kills {res.get('kills')} resumes {res.get('resumes')} identical {res.get('identical')} "
                  f"checkpoints {res.get('checkpoints')} ({res['seconds']} s, load {res['load']:.2f}) "
                  f"{'; '.join(res.get('differences', []))[:120]}", flush=True)
    out = os.path.join(ROOT, "bench", "results", "programs_as_started")
    if args.only:
        return
    with open(out + ".json", "w") as f:
        json.dump(rows, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write("# Programs as people start them, under `prosper torture` "
                f"({args.kills} kills each; bench/scripts/programs_as_started.py)\n\n")
        f.write(f"Machine: {os.cpu_count()} CPUs; load average at each row's end in the table; pools in "
                f"{'the --pool-dir given' if args.pool_dir else '/dev/shm'}.\n\n")
        f.write("| program | kills | resumes | identical | checkpoints | seconds | load | differences |\n|---|---:|---:|---|---:|---:|---:|---|\n")
        for r in rows:
            f.write(f"| {r['case'].replace('|', '&#124;')} | {r.get('kills')} | {r.get('resumes')} | {r.get('identical')} | "
                    f"{r.get('checkpoints')} | {r['seconds']} | {r['load']:.2f} | "
                    f"{'; '.join(r.get('differences', [])) or r.get('error', '')} |\n")
    print("wrote", out + ".md")


if __name__ == "__main__":
    sys.exit(main())
