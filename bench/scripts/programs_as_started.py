#!/usr/bin/env python3
"""Programs started the way people start them, each killed with SIGKILL at random instants and
resumed by `prosper torture` until it ends; identical = stdout, exit code and every output file
equal to a native run.  Writes bench/results/programs_as_started.{json,md}.

    bench/scripts/programs_as_started.py [--kills N] [--only NAME] [--user NAME]

With --user (run as root) every torture runs as that ordinary user instead, in a folder it owns,
its pools in its own places: the same guarantees without privilege (docs/run-resume.md).

The programs are the ones the e2e tests torture (tests/e2e/programs.py; there with assertions,
here the numbers are kept).  `lockowner plain --host-pids` is the fallback
without a pid namespace of the program's own: it is expected to time out (docs/limitations.md).
"""
import argparse
import json
import os
import pwd
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--only", help="run the cases whose name contains this (nothing is written)")
    ap.add_argument("--pool-dir", help="where the pools live (torture's default: /dev/shm); e.g. a disk")
    ap.add_argument("--user", help="run every torture as this ordinary user (this script run as root)")
    args = ap.parse_args()
    rows = []
    as_user = []
    with tempfile.TemporaryDirectory(prefix="prosper-started-") as d:
        if args.user:
            u = pwd.getpwnam(args.user)
            os.chown(d, u.pw_uid, u.pw_gid)
            as_user = ["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}", "--clear-groups"]
        for name, prog, extra, path in programs.as_started(d, PATH, BUILD):
            if args.only and args.only not in name:
                continue
            opts = ["--kills", str(args.kills), "--json"] + (extra if "--timeout" in extra else extra + ["--timeout", "300"])
            if args.pool_dir:
                opts += ["--pool-dir", args.pool_dir]
            t = time.monotonic()
            r = subprocess.run([*as_user, PROSPER, "torture", *opts, "--", *prog], capture_output=True, text=True,
                               cwd=d, env=dict(os.environ, PATH=path))
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
    out = os.path.join(ROOT, "bench", "results", "programs_as_started" + ("_ordinary_user" if args.user else ""))
    if args.only:
        return
    with open(out + ".json", "w") as f:
        json.dump(rows, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write("# Programs as people start them, under `prosper torture` "
                f"({args.kills} kills each; bench/scripts/programs_as_started.py"
                f"{' --user ' + args.user if args.user else ''})\n\n")
        if args.user:
            f.write(f"Every torture ran as the ordinary user `{args.user}` (no capabilities).\n\n")
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
