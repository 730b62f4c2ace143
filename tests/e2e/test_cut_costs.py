"""bench/cut_costs, the measurement behind the choice of how a cut reads written memory
(docs/run-resume.md): it reports positive, ordered costs for every size asked, says whether
soft-dirty bits are kept, and refuses bad arguments with exit code 2."""
import json
import os
import subprocess

from conftest import BUILD

CUT_COSTS = os.path.join(BUILD, "bench", "cut_costs")


def test_reports_every_size_asked():
    r = subprocess.run([CUT_COSTS, "1", "4", "8"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["reps"] == 1 and isinstance(out["soft_dirty"], bool)
    # a fault that a thread of this process answers: two wake-ups through the kernel at least
    assert out["fault_round_trip_ns"] > 500
    assert [s["mib"] for s in out["sizes"]] == [4, 8]
    for s in out["sizes"]:
        for key in ("reprotect_ns_per_page", "first_write_ns_per_page", "switch_ns_per_page", "switch_back_ns_per_page", "fork_ms"):
            assert s[key] > 0, (key, s)
        # no memory on any machine reads 4 MiB faster than 1 TB/s or slower than 1 MB/s
        for key in ("read_gbps_1", "read_gbps_2", "read_scattered_gbps_1", "read_scattered_gbps_2"):
            assert 0.001 < s[key] < 1000, (key, s)


def test_bad_arguments_exit_2():
    for args in (["0"], ["x"], ["1", "0"], ["1", "4x"], ["1001"]):
        r = subprocess.run([CUT_COSTS, *args], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith("usage: cut_costs"), args
