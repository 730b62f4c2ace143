"""NVM-resident memory (prosper_nvm_alloc, docs/run-resume.md "NVM-resident memory"): a program
that keeps part of its state in NVM memory and part in DRAM, killed with SIGKILL at random
instants and resumed again and again, ends with exactly the output of a native run (where the same
calls give plain memory); its NVM memory is never copied at a checkpoint but copied on write; a
fork ends checkpointing and later allocations fall back to plain memory; threads may share it."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"
NVMUSER = os.path.join(BUILD, "tests", "supervisor", "nvmuser")
SUP = os.path.join(BUILD, "src", "supervisor", "prosper-supervise")


def supervise(pool_dir, tmp_path, *args):
    pool, stats = os.path.join(pool_dir, "nvm.prosper"), tmp_path / "stats.json"
    r = subprocess.run([SUP, "run", "--pool", pool, "--stats-json", str(stats), "--", NVMUSER, *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    return r, json.loads(stats.read_text()), pool


def torture_identical(kills, seed, *args):
    """prosper torture of nvmuser ARGS: output identical to native, most kills resumed."""
    r = prosper("torture", "--kills", kills, "--seed", seed, "--json", "--", NVMUSER, *args, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["kills"] >= kills * 3 // 4 and res["resumes"] >= kills // 2


def test_nvm_and_dram_state_survive_kills():
    """The program checks at every round that its NVM round counter equals its DRAM one (prints
    INCONSISTENT otherwise), allocates and frees a second NVM area midway, and writes NVM through
    memset/memcpy; the native run is the reference."""
    kills = 20 if LONG else 8
    torture_identical(kills, 5, "mixed", 2, 2000)


def test_threads_writing_nvm_survive_kills():
    """Two threads write their own halves of one NVM area (faults of both threads, and faults that
    race with a checkpoint's interrupt) and of one DRAM area, each checking its halves agree."""
    kills = 12 if LONG else 5
    torture_identical(kills, 9, "threads", 2, 20000)


def test_dense_writer_with_segments_opened_ahead_survives_kills():
    """Every round writes every segment of 4 MiB of NVM in a new random order: after the first
    interval each interval's first fault opens (copy-on-write ahead, one batch) the segments the
    interval before changed, so kills land while segments are open without a fault of their own,
    in a commit that compares them, and right after a resume (no history: faults again)."""
    kills = 20 if LONG else 8
    torture_identical(kills, 13, "shuffled", 4, 1500)


def test_dense_writers_fault_once_per_interval_not_once_per_segment(pool_dir, tmp_path):
    """The stats of the batched path: a dense writer in random order (the previous interval's
    segments opened at the first fault) and one that sweeps its memory in order (each fault right
    after an open segment opens the next ones) take far fewer faults than they open segments, and
    the segments opened ahead were nearly all written; the output is the native one."""
    for mode, args in (("shuffled", (4, 300)), ("nvm", (4, 100))):
        native = subprocess.run([NVMUSER, mode, *map(str, args)], capture_output=True, text=True)
        r, st, _ = supervise(pool_dir, tmp_path, mode, *args)
        os.unlink(os.path.join(pool_dir, "nvm.prosper"))
        assert r.returncode == 0, r.stderr
        assert r.stdout == native.stdout
        assert st["checkpoints"] >= 5, st
        opened = st["nvm_faults"] + st["nvm_ahead_segments"]
        assert st["nvm_faults"] * 4 < opened, st
        assert st["nvm_ahead_changed"] * 2 >= st["nvm_ahead_segments"], st
        # a fault per segment and interval would be 64 per checkpoint (4 MiB); loose enough for a
        # loaded machine, where starved intervals write only part of a round
        assert st["nvm_faults"] * 4 < 64 * st["checkpoints"], st


def test_nvm_memory_is_copied_on_write_not_at_checkpoints(pool_dir, tmp_path):
    native = subprocess.run([NVMUSER, "nvm", "8", "40"], capture_output=True, text=True)
    r, st, pool = supervise(pool_dir, tmp_path, "nvm", 8, 40)
    assert r.returncode == 0, r.stderr
    assert r.stdout == native.stdout
    assert st["checkpoints"] >= 3 and st["nvm_faults"] > 0
    # 8 MiB written in every interval: none of it is copied at a stop (only the program's small
    # DRAM), all of it reaches the pool through copy-on-write and the committed blocks
    assert st["other_page_bytes"] + st["new_mapping_bytes"] < 1 << 20
    assert st["pool_cow_bytes"] > 8 << 20 and st["nvm_dirty_bytes"] > 8 << 20
    regions = json.loads(prosper("inspect", "--json", pool).stdout)["regions"]
    nvm = [g for g in regions if g["kind"] == "nvm"]
    assert len(nvm) == 1 and nvm[0]["mode"] == "direct" and nvm[0]["length"] == 8 << 20
    assert int(nvm[0]["vaddr"], 16) >= 0x600000000000


def test_a_fork_waits_and_nvm_memory_goes_on(pool_dir, tmp_path):
    """Checkpoints wait while the child lives (NVM memory is not kept across a process tree) and go
    on once it is waited for; NVM memory keeps being served (faults, dirty bytes) and the program
    ends as natively."""
    native = subprocess.run([NVMUSER, "fork", "2", "40"], capture_output=True, text=True)
    r, st, _ = supervise(pool_dir, tmp_path, "fork", 2, 40)
    assert r.returncode == 0, r.stderr
    assert r.stdout == native.stdout
    # the child is followed: a cut due while it lives waits (one note), none is taken without it
    assert st["disabled"] is None and st["tree_checkpoints"] == 0, st
    notes = [line for line in r.stderr.splitlines() if "checkpoints every" not in line]   # the tier, said once
    assert notes in ([], ["prosper run: a checkpoint waits: the program holds NVM memory and has child processes"]), r.stderr
    assert st["nvm_faults"] > 0 and st["nvm_dirty_bytes"] > 0 and st["nvm_regions"] == 0, st  # both freed


def test_bad_arguments_are_refused():
    r = subprocess.run([NVMUSER, "nvm", "0", "1"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr


def test_benchmark_script_measures_both_memories(tmp_path):
    """bench/scripts/nvm_alloc.py on a tiny configuration: a row per memory and pattern; NVM rows
    copy on write and copy less at the stop than DRAM rows, which never copy on write."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "bench", "scripts", "nvm_alloc.py")
    r = subprocess.run([sys.executable, script, "--sizes", "2", "--rounds", "20", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "nvm_alloc.json").read_text())["rows"]
    assert sorted((x["pattern"], x["memory"]) for x in rows) == [
        ("dense", "dram"), ("dense", "nvm"), ("sparse", "dram"), ("sparse", "nvm")]
    by = {(x["pattern"], x["memory"]): x for x in rows}
    for pattern in ("dense", "sparse"):
        nvm, dram = by[pattern, "nvm"], by[pattern, "dram"]
        assert nvm["cow_bytes_per_ckpt"] > 0 and nvm["nvm_faults_per_ckpt"] > 0
        assert dram["cow_bytes_per_ckpt"] == 0 and dram["nvm_faults_per_ckpt"] == 0
        assert nvm["stop_copy_bytes_per_ckpt"] < dram["stop_copy_bytes_per_ckpt"]
    assert "| 2 | dense | nvm |" in (tmp_path / "nvm_alloc.md").read_text()
    r = subprocess.run([sys.executable, script, "--sizes", "x"], capture_output=True, text=True)
    assert r.returncode == 2 and "--sizes" in r.stderr
