"""The asl benchmark (bench/asl_bench.cpp, paper Figs 7, 8, 12, 13) in its quick mode: the JSON has
every figure's rows and numbers that hold together.  Latencies are not asserted (they depend on
the machine's load); one exact invariant is: reopening after a snapshot replays exactly the
writes made after its sync phase."""
import json
import os
import subprocess

from conftest import BUILD


def test_asl_bench_quick():
    exe = os.path.join(BUILD, "bench", "asl_bench")
    assert os.access(exe, os.X_OK), "build first: make build"
    env = dict(os.environ, PMEM2_FORCE_GRANULARITY="CACHE_LINE")
    r = subprocess.run([exe, "--quick"], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["granularity"] == "CACHE_LINE" and res["cores"] >= 1 and res["reps"] == 1  # --quick: one run per point
    assert all(x["reps"] == res["reps"] for x in res["results"])
    rows = res["results"]
    by = {f: [x for x in rows if x["figure"] == f] for f in ("7", "8", "12", "13a", "mem")}

    assert {(x["container"], x["value_bytes"]) for x in by["7"]} == {
        (c, s) for c in ("vector", "priority_queue", "map", "unordered_map") for s in (64, 256, 1024, 4096)}
    for x in by["7"]:
        assert x["volatile_us"] > 0 and x["persistent_us"] > 0
        assert abs(x["overhead"] - x["persistent_us"] / x["volatile_us"]) < 0.01 * x["overhead"] + 0.01
        assert x["snapshots"] >= 0

    assert [x["threads"] for x in by["8"]][:2] == [1, 2]
    assert all(x["volatile_mops"] > 0 and x["persistent_mops"] > 0 and x["persistent_snapshot_in_run_mops"] > 0
               and x["snapshots_in_run"] >= 0 for x in by["8"])

    assert [x["op_ns"] for x in by["12"]] == [100, 300, 1000, 3000, 10000, 30000, 100000]
    for x in by["12"]:
        assert x["asl_us"] > 0 and x["sync_us"] > 0 and 0 <= x["entries_by_logger"] <= 1

    assert len(by["13a"]) == 2
    for x in by["13a"]:
        assert x["heap_mib"] > 0 and x["sync_ms"] > 0 and x["async_ms"] > 0
        assert x["replayed"] == x["writes_during_copy"] > 0
        assert x["recovery_ms"] >= x["load_ms"] > 0

    assert len(by["mem"]) == 1 and all(by["mem"][0][k] > 0 for k in ("populate_gbs", "memcpy_gbs", "memcpy_fresh_gbs"))
