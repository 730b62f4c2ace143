"""End-to-end tests of the pool from the command line: inspect refusals and output, the crash
simulator's acceptance numbers, real SIGKILLs of a computation, and a full file system."""
import json
import os
import random
import signal
import subprocess
import time

import pytest

from conftest import prosper


def one_line_refusal(r):
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prosper inspect: "), r.stderr
    return lines[0]


def make_pool(pool_tool, path, generations=3, size=16):
    r = subprocess.run([pool_tool, "life", str(path), "--generations", str(generations), "--size", str(size)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return path


def test_inspect_random_bytes(tmp_path):
    p = tmp_path / "random.pool"
    p.write_bytes(random.Random(1).randbytes(100000))
    assert "magic" in one_line_refusal(prosper("inspect", p))


def test_inspect_empty_missing_and_directory(tmp_path):
    p = tmp_path / "empty.pool"
    p.write_bytes(b"")
    assert "empty" in one_line_refusal(prosper("inspect", p))
    assert "No such file" in one_line_refusal(prosper("inspect", tmp_path / "nope.pool"))
    assert "not a regular file" in one_line_refusal(prosper("inspect", tmp_path))


def test_inspect_truncated_pool(tmp_path, pool_tool):
    p = make_pool(pool_tool, tmp_path / "t.pool")
    os.truncate(p, os.path.getsize(p) // 2)
    assert "truncated" in one_line_refusal(prosper("inspect", p))
    os.truncate(p, 100)
    one_line_refusal(prosper("inspect", p))


def test_inspect_other_users_pool(tmp_path, pool_tool):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    p = make_pool(pool_tool, tmp_path / "o.pool")
    os.chown(p, 65534, 65534)
    assert "owned by uid 65534" in one_line_refusal(prosper("inspect", p))


def test_inspect_valid_pool_json(tmp_path, pool_tool):
    p = make_pool(pool_tool, tmp_path / "v.pool", generations=3)
    r = prosper("inspect", "--json", p)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["epoch"] == 4  # the initial grid, then one epoch per generation
    assert j["format_version"] == 1 and j["layout_version"] == 2
    assert j["seg_size"] == 2 << 20 and j["block_size"] == 256
    assert j["checksums"]["commit_a"] and j["checksums"]["commit_b"]
    assert [r["name"] for r in j["regions"]] == ["grid"]
    assert j["regions"][0]["segments"][0]["state"] in ("MAIN", "BACK")
    human = prosper("inspect", p)
    assert human.returncode == 0 and "committed epoch 4" in human.stdout


def test_inspect_flipped_commit_word_is_reported_and_epoch_kept(tmp_path, pool_tool):
    p = make_pool(pool_tool, tmp_path / "f.pool", generations=2)
    with open(p, "r+b") as f:  # commit word A lives at 4096 (docs/pool-format.md)
        f.seek(4096 + 2)
        b = f.read(1)
        f.seek(4096 + 2)
        f.write(bytes([b[0] ^ 0x10]))
    j = json.loads(prosper("inspect", "--json", p).stdout)
    assert j["checksums"]["commit_a"] is False and j["checksums"]["commit_b"] is True
    assert j["epoch"] == 3
    # both words corrupt: refused, never guessed
    with open(p, "r+b") as f:
        f.seek(8192 + 5)
        b = f.read(1)
        f.seek(8192 + 5)
        f.write(bytes([b[0] ^ 0x01]))
    assert "commit words" in one_line_refusal(prosper("inspect", p))


def test_crashtest_acceptance():
    r = prosper("crashtest", "--states", "100000", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    j = json.loads(r.stdout)
    assert j["states"] >= 100000
    assert j["inconsistent"] == 0
    assert j["mutants"] > 0 and j["mutants_caught"] == j["mutants"]
    # both workloads ran under both failure models, every crpm variant, and each side's mutants
    assert j["workloads"] == ["pool", "crpm"]
    runs = {(x["workload"], x["variant"], x["granularity"]) for x in j["runs"]}
    crpm_variants = {v for w, v, _ in runs if w == "crpm"}
    assert {"default/hooks", "default/protect", "default/steal", "buffered/hooks", "buffered/protect"} <= crpm_variants
    assert runs == {(w, v, g) for w, v, _ in runs for g in ("cache_line", "page")}
    for w in ("pool", "crpm"):
        assert sum(x["states"] for x in j["runs"] if x["workload"] == w) >= 50000 * 9 // 10
        assert any(m["workload"] == w for m in j["mutant_results"])
    assert all(x["epochs"] > 0 and x["crash_points"] > 0 for x in j["runs"])


def test_crashtest_one_workload():
    r = prosper("crashtest", "--workload", "crpm", "--states", "4000", "--granularity", "page", "--no-mutants",
                "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    j = json.loads(r.stdout)
    assert j["workloads"] == ["crpm"] and j["mutants"] == 0
    assert {x["workload"] for x in j["runs"]} == {"crpm"} and {x["granularity"] for x in j["runs"]} == {"page"}


def test_crashtest_usage_errors():
    assert prosper("crashtest", "--states", "0").returncode == 2
    assert prosper("crashtest", "--granularity", "word").returncode == 2
    assert prosper("crashtest", "--workload", "heap").returncode == 2


def test_sigkill_at_random_instants_recovers_a_committed_generation(tmp_path, pool_tool):
    """A real process killed with SIGKILL; recovery must give exactly a committed generation."""
    rng = random.Random(7)
    p = tmp_path / "life.pool"
    kills = 0
    for _ in range(6):
        proc = subprocess.Popen([pool_tool, "life", str(p), "--generations", "100000", "--size", "256"],
                                stdout=subprocess.PIPE, text=True)
        for _ in range(rng.randint(3, 30)):
            proc.stdout.readline()
        time.sleep(rng.random() * 0.005)  # land anywhere, also inside a commit
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        v = subprocess.run([pool_tool, "life-verify", str(p), "--size", "256"], capture_output=True, text=True)
        assert v.returncode == 0, v.stdout + v.stderr
        assert json.loads(v.stdout)["identical"] is True
    assert kills == 6


def test_full_file_system_is_an_error_not_a_crash(tmp_path, pool_tool):
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount tmpfs here")
    try:
        p = mnt / "big.pool"
        r = subprocess.run([pool_tool, "life", str(p), "--generations", "5", "--size", "2048"],
                           capture_output=True, text=True)
        assert r.returncode == 2, r
        assert "No space left" in r.stderr and r.stderr.count("\n") == 1
        # the pool that was created is still a valid pool at epoch 0
        j = json.loads(prosper("inspect", "--json", p).stdout)
        assert j["epoch"] == 0
    finally:
        subprocess.run(["umount", str(mnt)])
