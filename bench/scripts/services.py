#!/usr/bin/env python3
"""Servers and event loops killed with SIGKILL at random instants and resumed, with the numbers of
kills the services issue asks for.  Writes bench/results/services.{json,md}.

    bench/scripts/services.py [--kills N] [--only NAME] [--pool-dir DIR]

Servers (tests/e2e/services.py, shared with the e2e tests, which run 5 kills each): Redis with a
client setting keys, a threaded and an asyncio Python server and a Go HTTP server (linked against
libc; its listener TCP, then MPTCP) counting in memory for clients that hold connections; each is driven from outside while it is
killed, and must keep every write acknowledged BOUND_MS before the kill.  Programs whose parts talk
over TCP among themselves (a Node.js loop querying its own HTTP server, `mpirun -np 2`: their
connections are kept whole) are run by `prosper torture` and compared with a native run.  Every case is printed as measured, failures too.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import services  # noqa: E402  (the scenarios, shared with the e2e tests)

def torture(d, kills, prog, pool_dir):
    opts = ["--kills", str(kills), "--json", "--timeout", "300"] + (["--pool-dir", pool_dir] if pool_dir else [])
    r = subprocess.run([services.PROSPER, "torture", *opts, "--", *prog], capture_output=True, text=True, cwd=d)
    try:
        res = json.loads(r.stdout)
    except ValueError:
        return {"ok": False, "failures": [(r.stderr or r.stdout).strip()[-300:]]}
    return {"kills": res["kills"], "resumes": res["resumes"], "ok": res["identical"],
            "failures": res["differences"], "native_seconds": res["native_seconds"]}


def cost(d, prog, pool_dir):
    """One native run and one `prosper run` (no kill) of prog, in d: the seconds of each, and the
    supervised run's stops and shared memory copied per checkpoint."""
    t = time.monotonic()
    native = subprocess.run(prog, capture_output=True, cwd=d)
    native_s = time.monotonic() - t
    pool, stats = os.path.join(pool_dir, "cost.prosper"), os.path.join(d, "cost.json")
    t = time.monotonic()
    run = subprocess.run([services.PROSPER, "run", "--max-overhead", "0", "--fresh", "--pool", pool, "--stats-json", stats, "--", *prog],
                         capture_output=True, cwd=d)
    supervised_s = time.monotonic() - t
    if os.path.exists(pool):
        os.unlink(pool)
    if native.returncode != 0 or run.returncode != 0 or run.stdout != native.stdout:
        return {"failed": f"native exit {native.returncode}, supervised {run.returncode}, same output "
                          f"{run.stdout == native.stdout}: {run.stderr.decode()[-200:]}"}
    with open(stats) as f:
        st = json.load(f)
    per = max(st["checkpoints"], 1)
    return {"native_seconds": round(native_s, 2), "supervised_seconds": round(supervised_s, 2),
            "ratio": round(supervised_s / native_s, 2), "checkpoints": st["checkpoints"],
            "mean_stop_ms": round(st["mean_stop_ms"], 1), "max_stop_ms": round(st["max_stop_ms"], 1),
            "shared_mib_per_checkpoint": round(st["shared_memory_bytes"] / per / 2**20, 2),
            "file_undo_mib_per_checkpoint": round(st["file_undo_bytes"] / per / 2**20, 2)}


def cases(d, kills, pool_dir):
    k = kills or 20
    yield "redis", lambda: services.redis_across_kills(d, pool_dir, k)
    for flavour, src in (("threading", services.COUNTER_THREADING), ("asyncio", services.COUNTER_ASYNCIO)):
        path = os.path.join(d, f"server_{flavour}.py")
        with open(path, "w") as f:
            f.write(src)
        yield f"py-{flavour}", (lambda p=path, fl=flavour: services.counter_across_kills(
            d, pool_dir, k, ["/usr/bin/python3", p], services.LineCounter, "py-" + fl))

    def go(mode):
        binary, why = services.build_go(d)
        if not binary:
            return {"ok": False, "failures": [why]}
        return services.counter_across_kills(d, pool_dir, k, [binary, mode], services.HttpCounter, "go-" + mode,
                                             outside=[binary, "client", str(2 + k // 3)])
    yield "go-http", lambda: go("serve")
    yield "go-http-mptcp-listener", lambda: go("serve-mptcp")
    node = os.path.join(d, "loop.js")
    with open(node, "w") as f:
        f.write(services.NODE_SELF_HTTP)
    yield "node-self-http", lambda: torture(d, kills or 30, ["/usr/bin/node", node], pool_dir)

    def mpi():
        ring, why = services.build_mpi_ring(d)
        if not ring:
            return {"ok": False, "failures": [why]}
        res = torture(d, kills or 30, services.MPIRUN_NP2 + [ring], pool_dir)
        res["cost"] = cost(d, services.MPIRUN_NP2 + [ring], pool_dir)
        return res
    yield "mpirun-np2", mpi


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, help="kills per case (default: 20 for servers, 30 for Node and MPI)")
    ap.add_argument("--only", help="run the cases whose name contains this (nothing is written)")
    ap.add_argument("--pool-dir", help="where the pools live (default: /dev/shm)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="prosper-services-") as d:
        pool_dir = args.pool_dir or tempfile.mkdtemp(prefix="prosper-services-", dir="/dev/shm")
        try:
            for name, run in cases(d, args.kills, pool_dir):
                if args.only and args.only not in name:
                    continue
                t = time.monotonic()
                try:
                    res = run()
                except Exception as e:  # noqa: BLE001  (kept as a failure of the case, printed)
                    res = {"ok": False, "failures": [repr(e)[:300]]}
                res["case"], res["seconds"] = name, round(time.monotonic() - t, 1)
                rows.append(res)
                print(json.dumps(res), flush=True)
        finally:
            if not args.pool_dir:
                shutil.rmtree(pool_dir, ignore_errors=True)
    if args.only:
        return 0
    load = os.getloadavg()
    meta = {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in load], "pool_dir": args.pool_dir or "/dev/shm",
            "bound_ms": services.BOUND_MS}
    out = os.path.join(ROOT, "bench", "results", "services")
    with open(out + ".json", "w") as f:
        json.dump({"meta": meta, "cases": rows}, f, indent=1)
    with open(out + ".md", "w") as f:
        f.write("# Servers and event loops killed and resumed (bench/scripts/services.py)\n\n")
        f.write(f"{meta['cpus']} CPUs, load average {meta['loadavg'][0]} at the end, pools in {meta['pool_dir']}. "
                f"Servers: every write acknowledged {services.BOUND_MS} ms before a kill must be kept; "
                "`lost oldest` is the age at the kill of the oldest acknowledged write a kill undid.\n\n")
        f.write("| case | kills | ok | acknowledged | lost oldest (ms) | seconds | what failed |\n|---|---|---|---|---|---|---|\n")
        for r in rows:
            acked = r.get("keys_acknowledged", r.get("increments_acknowledged", ""))
            f.write(f"| {r['case']} | {r.get('kills', '')} | {'yes' if r['ok'] else 'NO'} | {acked} | "
                    f"{r.get('lost_oldest_ms', '')} | {r['seconds']} | {'; '.join(map(str, r['failures']))[:300]} |\n")
        costs = [r for r in rows if "cost" in r]
        if costs:
            f.write("\nWhat checkpointing costs them, one native run against one `prosper run` without a kill "
                    "(interval 10 ms):\n\n| case | native s | supervised s | ratio | checkpoints | mean stop ms | "
                    "max stop ms | shared memory MiB / checkpoint | mapped files MiB / checkpoint |\n"
                    "|---|---|---|---|---|---|---|---|---|\n")
            for r in costs:
                c = r["cost"]
                if "failed" in c:
                    f.write(f"| {r['case']} | failed: {c['failed']} |||||||\n")
                    continue
                f.write(f"| {r['case']} | {c['native_seconds']} | {c['supervised_seconds']} | {c['ratio']} | "
                        f"{c['checkpoints']} | {c['mean_stop_ms']} | {c['max_stop_ms']} | "
                        f"{c['shared_mib_per_checkpoint']} | {c['file_undo_mib_per_checkpoint']} |\n")
    return 0 if all(r["ok"] and "failed" not in r.get("cost", {}) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
