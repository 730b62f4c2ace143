"""The capture half of `prosper run` (build/src/supervisor/prosper-supervise): every checkpoint
of a program whose map keeps changing equals its live memory (soundness oracle), for every
tracker, also with threads; the program's output, exit code and sleeps are untouched; a fork
stops checkpointing without harming the program; an existing file is never overwritten."""
import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, prosper

SUP = os.path.join(BUILD, "src", "supervisor", "prosper-supervise")
MAPPER = os.path.join(BUILD, "tests", "supervisor", "mapper")


@pytest.fixture(autouse=True)
def _pools_in_memory(pool_dir):
    global POOLS
    POOLS = pool_dir


def supervise(tmp_path, *args, tracker="page", verify=True, interval=None, extra=()):
    pool, stats = os.path.join(POOLS, "p.pool"), tmp_path / "stats.json"
    cmd = [SUP, "run", "--pool", pool, "--stack-tracker", tracker, "--heap-tracker", tracker,
           "--stats-json", str(stats), *extra]
    if verify:
        cmd.append("--verify")
    if interval:
        cmd += ["--interval", str(interval)]
    r = subprocess.run(cmd + ["--"] + [str(a) for a in args], capture_output=True, text=True, timeout=300)
    return r, json.loads(stats.read_text()) if stats.exists() else None, pool


@pytest.mark.parametrize("tracker", ["page", "diff", "full"])
def test_every_checkpoint_equals_live_memory(tmp_path, tracker):
    native = subprocess.run([MAPPER, "40"], capture_output=True, text=True)
    r, st, pool = supervise(tmp_path, MAPPER, "40", tracker=tracker)
    assert r.returncode == 0, r.stderr
    assert r.stdout == native.stdout
    assert st["checkpoints"] >= 5 and st["disabled"] is None
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr
    assert st["max_stop_ms"] == max(st["first_stop_ms"], st["max_stop_after_first_ms"]) > 0, st
    j = json.loads(prosper("inspect", "--json", pool).stdout)
    assert j["epoch"] == st["checkpoints"] + 1  # and the epoch that marks the program finished
    assert "stack" in {reg["kind"] for reg in j["regions"]}


@pytest.mark.parametrize("tracker", ["page", "diff"])
def test_every_checkpoint_equals_live_memory_with_a_precopy(tmp_path, tracker):
    """--copy precopy: most written pages are read by a pass before each stop while the program
    runs (mapper maps, grows, shrinks and unmaps all the time, so mappings also appear and vanish
    between a pass and its stop); every checkpoint still equals live memory."""
    native = subprocess.run([MAPPER, "40"], capture_output=True, text=True)
    r, st, _ = supervise(tmp_path, MAPPER, "40", tracker=tracker, interval=1, extra=["--copy", "precopy"])
    assert r.returncode == 0 and r.stdout == native.stdout, r.stderr
    assert st["checkpoints"] >= 20 and st["disabled"] is None, r.stderr
    assert st["copy"] == "precopy" and st["precopies"] >= st["checkpoints"] // 2
    assert st["precopy_bytes"] > 0 and st["new_mapping_bytes"] > 0
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr


@pytest.mark.parametrize("copy", ["stop", "precopy"])
def test_a_mapping_replaced_in_place_among_others_is_saved_anew(tmp_path, copy):
    """Three saved mappings side by side, one of them unmapped and mapped again at the same place
    and size between two checkpoints, each round (remapper): the stop's one question for the run
    of mappings finds the new one untracked, and every checkpoint equals live memory."""
    prog = os.path.join(BUILD, "tests", "supervisor", "remapper")
    native = subprocess.run([prog, "40"], capture_output=True, text=True)
    r, st, _ = supervise(tmp_path, prog, "40", tracker="diff", interval=2, extra=["--copy", copy])
    assert r.returncode == 0 and r.stdout == native.stdout, r.stderr
    assert st["checkpoints"] >= 20 and st["disabled"] is None, r.stderr
    assert st["new_mapping_bytes"] >= 20 * 16 * 4096, st  # each replaced mapping saved anew
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a read is shared out only between two cores or more")
@pytest.mark.parametrize("tracker", ["page", "diff"])
def test_a_stop_read_shared_between_cores_equals_live_memory(tmp_path, tracker):
    """scale writes 8-byte words at random all over 8 MiB: each stop reads more than 1 MiB, in
    many separate ranges, and shares the read out between the cores (src/supervisor/base/readers.c,
    a range cut in two where the shares meet); every checkpoint still equals live memory."""
    prog = os.path.join(BUILD, "bench", "scale")
    native = subprocess.run([prog, "8", "1000000"], capture_output=True, text=True)
    r, st, _ = supervise(tmp_path, prog, "8", "1000000", tracker=tracker, interval=2)
    assert r.returncode == 0 and r.stdout == native.stdout, r.stderr
    assert st["checkpoints"] >= 3 and st["disabled"] is None, r.stderr
    # Not every stop reads 1 MiB: on a loaded machine the program may write little in 2 ms. The
    # first stop reads all 8 MiB, and a shared read is the rule whenever the program ran.
    assert st["stop_reads_shared"] >= 3, st
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr


# A 192 MiB private mapping, left untouched; a page of it written every 5 ms for 40 rounds (small
# checkpoints, while the supervisor knows the mapping), then 56 MiB of its pages at once.
BURST = """
import mmap, time
b = mmap.mmap(-1, 192 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
for i in range(40):
    b[i * 4096] = 1
    time.sleep(0.005)
for off in range(0, 56 << 20, 4096):
    b[off] = 2
for i in range(20):
    b[i * 4096 + 1] = 3
    time.sleep(0.005)
print(sum(b[0:56 << 20:4096]))
"""


def test_the_staging_is_made_ready_before_a_burst_of_writes(tmp_path):
    """The pages a stop reads into are faulted in beside the running program after each commit
    (stage_ahead, src/supervisor/memory/stage.c): a burst that writes more than any checkpoint before it
    is read without a fault of the supervisor's per page (only the first checkpoints, which read
    the new mappings whole, fault), and the staging stays bounded -- 64 MiB or twice the largest
    checkpoint, not the 192 MiB the program maps.  Every checkpoint equals live memory."""
    prog = tmp_path / "burst.py"
    prog.write_text(BURST)
    native = subprocess.run(["/usr/bin/python3", str(prog)], capture_output=True, text=True)
    r, st, _ = supervise(tmp_path, "/usr/bin/python3", prog, tracker="diff")
    assert r.returncode == 0 and r.stdout == native.stdout == "28672\n", r.stderr
    assert st["checkpoints"] >= 10 and st["disabled"] is None, r.stderr
    assert st["stop_read_bytes"] >= 56 << 20, st  # the burst was read in the stops
    # 14336 pages of the burst (3400-3900 faults without stage_ahead, the largest checkpoint's);
    # what faults now is the first checkpoints' staging of the new mappings (~900 pages)
    assert st["stop_read_faults"] * 4096 < st["new_mapping_bytes"] + (4 << 20), st
    assert 64 << 20 <= st["staging_bytes"] <= 2 * (56 << 20) + (16 << 20), st
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr


def test_the_first_stop_reads_into_pages_in_place(tmp_path):
    """The batch's first MiB is faulted in while the program starts (sup_supervise): random's
    first checkpoint, about 640 KiB of new mappings read whole, faults no page of the supervisor's
    (about 160 did before), nor do the later ones."""
    prog = os.path.join(BUILD, "bench", "random")
    r, st, _ = supervise(tmp_path, prog, "1000", tracker="diff", verify=False)
    assert r.returncode == 0 and st["checkpoints"] >= 3 and st["disabled"] is None, r.stderr
    assert st["stop_read_bytes"] > 512 << 10, st
    assert st["stop_read_faults"] < 16, st
    assert st["staging_bytes"] >= 1 << 20, st


@pytest.mark.parametrize("tracker", ["page", "diff"])
def test_the_stack_growing_over_bytes_written_while_dead_is_saved(tmp_path, tracker):
    """SP's page is saved from SP - 128 up; its part below, written while dead, must still be saved
    once the stack grows over it without writing that page again (spdescend's rounds)."""
    prog = os.path.join(BUILD, "tests", "supervisor", "spdescend")
    native = subprocess.run([prog, "8"], capture_output=True, text=True)
    r, st, _ = supervise(tmp_path, prog, "8", tracker=tracker, interval=2)
    assert r.returncode == 0 and r.stdout == native.stdout, r.stderr
    assert st["checkpoints"] >= 8 and st["disabled"] is None
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr


def test_sleeps_are_not_shortened(tmp_path):
    r, st, _ = supervise(tmp_path, MAPPER, "60", verify=False, interval=2, extra=("--max-overhead", "0"))
    assert r.returncode == 0
    m = re.search(r"elapsed ([0-9.]+) requested ([0-9.]+)", r.stderr)
    assert m and float(m.group(1)) >= float(m.group(2))
    assert st["checkpoints"] >= 10


def test_the_stop_is_accounted_for_by_its_phases(tmp_path):
    """stop_*_us partition the stop: they add up to the mean stop, and the phases that exist for
    every program (its threads, its map, its fds, its record) are never zero."""
    r, st, _ = supervise(tmp_path, MAPPER, "60", verify=False, interval=2, extra=("--max-overhead", "0"))
    assert r.returncode == 0 and st["checkpoints"] >= 10
    phases = {k: v for k, v in st.items() if k.startswith("stop_") and k.endswith("_us")}
    assert set(phases) == {f"stop_{p}_us" for p in
                           ("threads", "maps", "follow", "dirty", "read", "fds", "blob", "metadata", "tree")}
    for p in ("threads", "maps", "fds", "blob"):
        assert phases[f"stop_{p}_us"] > 0, phases
    total_us = sum(phases.values())
    assert 0.8 * st["mean_stop_ms"] * 1e3 <= total_us <= 1.01 * st["mean_stop_ms"] * 1e3 + 1, (total_us, st["mean_stop_ms"])


def test_exit_code_is_the_programs(tmp_path):
    r, st, _ = supervise(tmp_path, "/bin/sh", "-c", "exit 3", verify=False)
    assert r.returncode == 3


SHELL_WITH_A_CHILD = ["/bin/sh", "-c", "sleep 0.2; /bin/echo child; i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done"]


def test_checkpoints_wait_while_the_program_has_a_child_without_a_namespace(tmp_path):
    """--host-pids: while `sleep` runs as the shell's child no cut is taken; checkpointing goes on after."""
    r, st, _ = supervise(tmp_path, *SHELL_WITH_A_CHILD, verify=True, extra=["--host-pids"])
    assert r.returncode == 0 and r.stdout == "child\n"
    assert r.stderr.count("started a child process") == 1 and st["disabled"] is None, r.stderr
    assert st["waited_for_children"] >= 50 and st["checkpoints"] >= 3 and st["mismatches"] == 0, st
    assert st["tree_checkpoints"] == 0, st


def test_checkpoints_hold_the_child_in_the_programs_namespace(tmp_path):
    """With the program's own pid namespace (the default) the cuts include `sleep`: checkpoints go
    on while it runs, every process's memory equal to its saved copy."""
    r, st, _ = supervise(tmp_path, *SHELL_WITH_A_CHILD, verify=True)
    assert r.returncode == 0 and r.stdout == "child\n"
    assert "started a child process" not in r.stderr and st["disabled"] is None, r.stderr
    assert st["tree_checkpoints"] >= 5 and st["mismatches"] == 0, st


@pytest.mark.parametrize("fresh", [[], ["--fresh"]])
def test_an_existing_file_is_never_overwritten(tmp_path, fresh):
    pool = tmp_path / "p.pool"
    pool.write_bytes(b"precious")
    r = subprocess.run([SUP, "run", "--pool", str(pool), *fresh, "--", "/bin/true"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a usable pool" in r.stderr
    assert pool.read_bytes() == b"precious"


def test_sub_page_diff_saves_the_stack_by_the_word(tmp_path):
    """Sparse (one word per 4 KiB page of a live frame): whole pages vs 8-byte granules."""
    sparse = os.path.join(BUILD, "bench", "sparse")
    page_dir, diff_dir = tmp_path / "page", tmp_path / "diff"
    page_dir.mkdir()
    diff_dir.mkdir()
    base = [SUP, "run", "--verify", "--interval", "5"]
    rp = subprocess.run(base + ["--pool", str(page_dir / "p"), "--stack-tracker", "page", "--stats-json",
                                str(page_dir / "s.json"), "--", sparse, "20000"], capture_output=True, text=True)
    rd = subprocess.run(base + ["--pool", str(diff_dir / "p"), "--stack-tracker", "diff", "--stats-json",
                                str(diff_dir / "s.json"), "--", sparse, "20000"], capture_output=True, text=True)
    assert rp.returncode == 0 and rd.returncode == 0 and rp.stdout == rd.stdout
    sp, sd = json.loads((page_dir / "s.json").read_text()), json.loads((diff_dir / "s.json").read_text())
    assert sp["mismatches"] == 0 and sd["mismatches"] == 0, rp.stderr + rd.stderr
    per_page = sp["stack_bytes"] / sp["checkpoints"]
    per_diff = sd["stack_bytes"] / sd["checkpoints"]
    assert per_page >= 20 * max(per_diff, 1)
