"""bench/wakeup_cost, the measurement behind thread_wakeup_ns of prosper-sim's this-machine
profile: it reports ordered, physically possible latencies, and refuses bad arguments with exit
code 2."""
import json
import os
import subprocess

from conftest import BUILD

WAKEUP = os.path.join(BUILD, "bench", "wakeup_cost")


def test_reports_ordered_latencies():
    r = subprocess.run([WAKEUP, "2000"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rounds"] == 2000 and out["cpus"] >= 1
    rt = out["same_core_round_trip_ns"]
    # two wake-ups and two context switches through the kernel cannot take less than ~100 ns
    assert 100 < rt["min"] <= rt["median"] <= rt["p90"]
    assert out["timer_activations"] == 201 and 0 <= out["timer_activations_seen"] <= 201
    timer = out["timer_activation_ns"]
    if out["timer_activations_seen"]:
        assert 100 < timer["min"] <= timer["median"] <= timer["p90"]
    else:
        assert timer is None
    cross = out["cross_core_wakeup_ns"]
    if out["cpus"] >= 2:
        assert 0 < cross["min"] <= cross["median"] <= cross["p90"]
    else:
        assert cross is None


def test_bad_arguments_exit_2():
    for args in (["0"], ["x"], ["1", "2"]):
        r = subprocess.run([WAKEUP, *args], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith("usage: wakeup_cost")
