"""`prosper bench overhead` on one small program: the JSON has the promised structure and sane
numbers.  The overhead targets are not asserted here (they depend on the machine's load); the
benchmark itself reports them as met or not met."""
import json
import os

from conftest import prosper


def test_bench_overhead_quick_quicksort(tmp_path):
    r = prosper("bench", "overhead", "--quick", "--programs", "quicksort", "--json",
                "--pool-dir", tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["benchmark"] == "overhead" and res["reps"] == 1 and res["failures"] == []
    m = res["machine"]
    assert m["nproc"] >= 1 and m["kernel"] and m["pool_dir"] == str(tmp_path) and m["pool_fs"]
    assert 0 <= m["steal_percent"] <= 100 and "_cpu_start" not in m
    assert os.listdir(tmp_path) == [], "pools are deleted after use"

    [row] = res["programs"]
    assert row["program"] == "quicksort" and row["argv"] == ["quicksort"] and row["kind"] == "micro"
    assert row["native_s"] > 0 and len(row["native_runs_s"]) == 1
    for mode in ("page", "diff", "full", "precopy"):
        t = row[mode]
        assert t["median_s"] > 0 and t["checkpoints"] > 0 and t["mean_stop_ms"] > 0
        assert abs(t["slowdown"] - (t["median_s"] / row["native_s"] - 1)) < 1e-9
        assert t["stop_read_bytes_per_ckpt"] > 0
        assert 0 < t["fixed_stop_us"] < t["mean_stop_ms"] * 1e3  # the rest copied what was written
    # only the precopy mode reads anything before its stops
    assert row["precopy"]["precopy_bytes_per_ckpt"] > 0 and row["diff"]["precopy_bytes_per_ckpt"] == 0
    assert row["checkpoints"] > 0 and row["mean_stop_ms"] > 0
    assert row["slowdown"] == row["diff"]["slowdown"]

    exact, diff, page = (row["stack_exact_bytes_per_ckpt"], row["stack_diff_bytes_per_ckpt"],
                         row["stack_page_bytes_per_ckpt"])
    assert 0 < exact <= diff <= page
    assert 0 <= row["other_diff_bytes_per_ckpt"] <= row["other_page_bytes_per_ckpt"]
    assert 0 < row["kill_after_s"] < row["native_s"]
    assert row["restored_bytes"] > 0 and row["restore_memory_seconds"] > 0 and row["restore_gbps"] > 0
    # the command's time to running includes the pool's checks before the relaunch
    assert row["resume_command_seconds"] > row["resume_seconds"] > 0

    t = row["targets"]
    assert set(t) == {"slowdown", "stack_over_exact", "restore_gbps", "max_stop_ms", "max_stop_after_first_ms"}
    for v in t.values():
        assert set(v) == {"target", "measured", "met"} and isinstance(v["met"], bool)
    assert res["summary"]["checked"] == 5 and res["summary"]["met"] + res["summary"]["not_met"] == 5
    # the longest stop is the first or one after it
    d = row["diff"]
    assert 0 < d["max_stop_after_first_ms"] <= d["max_stop_ms"]
    assert t["max_stop_ms"]["measured"] == d["max_stop_ms"]
    # the readable table went to stderr
    assert "Targets" in r.stderr and "quicksort" in r.stderr


def test_bench_unknown_program_is_a_usage_error():
    r = prosper("bench", "overhead", "--programs", "nosuch")
    assert r.returncode == 2 and "unknown program" in r.stderr


def test_the_long_mode_scales_the_work_and_refuses_nonsense(monkeypatch):
    """--seconds S lengthens a program by its count of work so that it takes about S: the count is
    fitted to time = fixed + count x per-round from two probes.  The probes' times come from a
    model here (a fixed part of 0.3 s and the default count taking 0.5 s more), so that the fit is
    checked exactly, not the machine's noise (the benchmark reports how long its runs took)."""
    import sys
    from conftest import ROOT
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import prosper.cmd_bench as bench
    base = bench.DEFAULT_COUNT["recursive-4"]

    def model(argv):
        count = int(argv[-1]) if len(argv) > 2 else base
        return 0.3 + 0.5 * count / base, ""

    monkeypatch.setattr(bench, "run_native", model)
    argv = ["recursive", "4"]
    for seconds in (2.0, 8.0):
        count = int(bench.lengthened("recursive-4", argv, seconds)[-1])
        assert abs(model(argv + [str(count)])[0] - seconds) < 0.01 * seconds, (seconds, count)
    assert bench.lengthened("pr_mt", ["pr_mt", "18", "3"], 5) == ["pr_mt", "18", "3"]  # no count to scale
    r = prosper("bench", "overhead", "--programs", "random", "--seconds", "0")
    assert r.returncode == 2 and "--seconds must be positive" in r.stderr
