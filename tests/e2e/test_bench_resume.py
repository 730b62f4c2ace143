"""`prosper bench resume` on pr, once each way: the JSON holds what it promises (one checkpoint,
resumed lazily and eagerly, each output checked against the native one; the lazy one ran while its
memory was filled), and bad input is refused.  How soon each runs again is not asserted (it
depends on the machine): the benchmark reports it against its target as met or not met."""
import json
import os

from conftest import prosper


def test_bench_resume_lazy_and_eager_from_one_checkpoint(pool_dir):
    r = prosper("bench", "resume", "--programs", "pr", "--quick", "--json", "--pool-dir", pool_dir, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["benchmark"] == "resume" and res["failures"] == [] and res["reps"] == 1
    assert os.listdir(pool_dir) == []  # every pool and copy removed
    [row] = res["programs"]
    assert row["program"] == "pr" and 0 < row["killed_at_s"]
    lazy, eager = row["lazy"], row["eager"]
    assert lazy["lazy_runs"] == 1 and eager["lazy_runs"] == 0
    assert lazy["outputs_same"] and eager["outputs_same"]
    for m in (lazy, eager):
        assert 0 < m["running_ms"] < m["command_ms"] and m["memory_ms"] > 0 and m["restored_mib"] > 16
    assert eager["fill_faults"] == 0
    assert row["running_met"] == (lazy["running_ms"] <= res["running_ms_target"])
    assert "lazy resumes" in r.stderr and "1 of 1" in r.stderr


def test_bench_resume_refuses_a_disk_pool_dir_and_unknown_programs(tmp_path):
    r = prosper("bench", "resume", "--programs", "nosuch")
    assert r.returncode == 2 and "unknown program" in r.stderr
    disk = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "build")
    r = prosper("bench", "resume", "--programs", "pr", "--pool-dir", disk)
    assert r.returncode == 2 and "memory file system" in r.stderr
