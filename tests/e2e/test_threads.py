"""Multi-threaded programs under prosper run / resume: every thread is stopped for a checkpoint (a
consistent cut), every thread's stack is saved, and a resume recreates every thread with its own
TLS, stack, registers and signal mask; threads blocked in futex waits, threads that come and go
between checkpoints, and a thread writing into another thread's stack all survive SIGKILL."""
import json
import os
import subprocess

import pytest

from conftest import BUILD, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"
SUP = os.path.join(BUILD, "src", "supervisor", "prosper-supervise")
THREADCHECK = os.path.join(BUILD, "tests", "supervisor", "threadcheck")


def torture(*prog, kills):
    r = prosper("torture", "--kills", kills, "--json", "--", *prog, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("name,args", [("pr_mt", ["18", "3"]), ("prodcons", [])])
def test_multithreaded_bench_program_survives_kills(name, args):
    res = torture(os.path.join(BUILD, "bench", name), *args, kills=60 if LONG else 30)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 15


def test_threads_come_and_go_and_write_each_others_stacks():
    res = torture(THREADCHECK, kills=40 if LONG else 20)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 10


@pytest.mark.parametrize("tracker", ["page", "diff", "full"])
def test_every_checkpoint_of_every_thread_equals_live_memory(tmp_path, pool_dir, tracker):
    """The soundness oracle with threads; the writes into a foreign stack are seen by every tracker."""
    stats = tmp_path / "s.json"
    r = subprocess.run([SUP, "run", "--verify", "--interval", "2", "--stack-tracker", tracker, "--heap-tracker",
                        tracker, "--pool", os.path.join(pool_dir, "p"), "--stats-json", str(stats), "--",
                        THREADCHECK, "150"], capture_output=True, text=True, timeout=300)
    native = subprocess.run([THREADCHECK, "150"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == native.stdout
    st = json.loads(stats.read_text())
    assert st["disabled"] is None and st["checkpoints"] >= 10
    assert st["mismatches"] == 0 and st["verified_bytes"] > 0, r.stderr  # where they differ
    assert st["mean_threads"] > 1


def test_unmodified_multithreaded_program_from_the_distribution(tmp_path):
    xz = "/usr/bin/xz"
    if not os.access(xz, os.X_OK):
        pytest.skip("xz is not installed")
    # pseudo-random text (deterministic), hard enough to compress that xz runs a second or two
    import base64
    import random
    data = tmp_path / "data.txt"
    data.write_bytes(base64.encodebytes(random.Random(7).randbytes(2 << 20)))
    res = torture(xz, "-T2", "-6", "-c", str(data), kills=12)
    assert res["identical"], res["differences"]
    # xz maps large buffers at start: kills before its first commit start it afresh
    assert res["resumes"] >= 3


# ---------------------------------------------------------------- thread ids at a resume


def _torture_ids(*prog, kills):
    # a resume that hangs fails in minutes, not at torture's default of ten
    r = prosper("torture", "--kills", kills, "--timeout", 240, "--json", "--", *prog, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= kills // 2, res


def test_a_kill_inside_dlopen_resumes():
    """Most of dlopener's run is a library constructor inside dlopen(), the loader's recursive
    lock held: a resume gives that lock to the thread's new id (lockowners.c); before, every such
    resume hung in the loader's next lock."""
    d = os.path.join(BUILD, "tests", "supervisor")
    _torture_ids(os.path.join(d, "dlopener"), os.path.join(d, "libslowinit.so"), "8", kills=12)


def test_a_robust_mutex_held_across_a_checkpoint_unlocks_after_a_resume():
    """Two threads hold a robust (error-checking) mutex each across checkpoints and unlock it: as
    natively after every resume (with the old ids left in place: EPERM, then a lock that waits
    forever)."""
    _torture_ids(os.path.join(BUILD, "tests", "supervisor", "lockowner"), "6", kills=20)
