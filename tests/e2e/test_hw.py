"""End-to-end tests of `prosper hw` (the Valgrind tool): checkpoint sizes known by
construction, the soundness oracle, the program-driven MSRs, and refusals."""
import json
import os

import pytest

from conftest import BUILD, prosper

SPARSE = os.path.join(BUILD, "tests", "hw", "sparse_frames")
EXPLICIT = os.path.join(BUILD, "tests", "hw", "explicit_msr")
NEVER = "1000000000000"  # only the program's own checkpoint requests (and the one at exit)


def hw_json(*args):
    r = prosper("hw", "--json", *args)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_sparse_frames_sizes_by_construction():
    rounds, pages = 10, 64
    j = hw_json("--interval-instr", NEVER, "--", SPARSE, rounds, pages)
    # first (full) + one per round
    assert j["checkpoints"] == rounds + 1
    n = j["checkpoints"] - 1
    cfg = {c["gran"]: c for c in j["configs"]}
    assert sorted(cfg) == [8, 16, 32, 64, 128]
    for c in j["configs"]:
        assert c["soundness_mismatches"] == 0
        assert c["soundness_bytes_compared"] > 0
        assert c["stores_tracked"] > 0
    # every round writes one changed word in each of `pages` pages of a live frame
    p8 = cfg[8]["bytes"]
    assert rounds * pages * 8 <= p8 <= rounds * (pages * 8 + 256)
    assert cfg[128]["bytes"] >= rounds * pages * 128
    dirtybit = j["dirtybit_bytes_per_ckpt"] * n
    assert rounds * pages * 4096 <= dirtybit <= rounds * (pages + 4) * 4096
    # the acceptance shape: Prosper 8 B at least 50x smaller than Dirtybit
    assert j["dirtybit_bytes_per_ckpt"] >= 50 * cfg[8]["bytes_per_ckpt"]
    # the exact minimum is what the round changed, and 8 B tracking is close to it
    exact = j["exact_bytes_per_ckpt"] * n
    assert rounds * pages * 8 <= exact <= p8
    assert cfg[8]["bytes_per_ckpt"] <= 1.25 * j["exact_bytes_per_ckpt"]


def test_granularity_and_table_lists_make_configurations():
    j = hw_json("--gran", "8,64", "--table", "4,16", "--hwm", "24", "--lwm", "0,8", "--interval-instr", NEVER,
                "--", SPARSE, 2, 4)
    got = sorted((c["gran"], c["table"], c["lwm"]) for c in j["configs"])
    assert got == [(8, 4, 0), (8, 16, 8), (64, 4, 0), (64, 16, 8)]
    small = next(c for c in j["configs"] if c["table"] == 4 and c["gran"] == 8)
    # a 4-entry table with LWM 0 must fall back to random evictions on these 4 KiB-apart stores
    assert small["random_evictions"] > 0
    assert all(c["soundness_mismatches"] == 0 for c in j["configs"])


def test_instruction_intervals_checkpoint_a_real_program():
    j = hw_json("--interval-instr", "20000", "--gran", "8", "--", SPARSE, 3, 16)
    assert j["checkpoints"] > 3  # interval boundaries, not only the requested ones
    assert j["configs"][0]["soundness_mismatches"] == 0


def test_program_driven_msrs():
    r = prosper("hw", "--", EXPLICIT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "explicit ok" in r.stdout


def test_refusals():
    for args in (["--", "/no/such/program"], ["--gran", "12", "--", SPARSE], ["--table", "0", "--", SPARSE],
                 ["--table", "16,8", "--hwm", "24,20,10", "--", SPARSE], []):
        r = prosper("hw", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("prosper: hw:")


THREADS = os.path.join(BUILD, "tests", "hw", "threads_stacks")


def test_threads_have_their_own_stacks_and_switches_flush_the_tracker():
    rounds = 12
    j = hw_json("--gran", "8,64", "--interval-instr", NEVER, "--", THREADS, 3, rounds)
    assert j["threads"] == 4  # main + 3 workers
    assert j["checkpoints"] == rounds
    assert j["thread_switches"] > 0
    # worker 2 writes worker 1's frame once per round: never lost, always counted
    assert j["inter_thread_stores"] == rounds
    for c in j["configs"]:
        assert c["soundness_mismatches"] == 0 and c["soundness_bytes_compared"] > 0
    assert sum(c["switch_writeouts"] for c in j["configs"]) > 0
    # each worker changes 64 words of its frame per round: 3 * 64 * 8 bytes at 8 B granules
    c8 = next(c for c in j["configs"] if c["gran"] == 8)
    assert c8["bytes_per_ckpt"] >= 3 * 64 * 8


def test_a_wrapper_that_execs_the_program_is_measured(tmp_path):
    """Shell wrappers and version shims exec the real program: the tool follows the exec."""
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\nexec {SPARSE} 2 4\n")
    wrapper.chmod(0o755)
    j = hw_json("--gran", "8", "--interval-instr", NEVER, "--", wrapper)
    assert j["checkpoints"] == 3  # the full one + one per round, from the exec'd program
    assert j["configs"][0]["soundness_mismatches"] == 0
