"""A pool on a disk (docs/durability.md): checkpoints go into a fast pool in memory and are copied
into the pool every --durable-every; a kill of everything resumes from the fast pool, a power cut
(the fast pool gone) from the durable one -- both identical to a native run.  The copy's protocol
under power failures is `prosper crashtest`'s copy variant (tests/unit)."""
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from conftest import BUILD, PROSPER, kill_at_epoch, prosper

QUICKSORT = os.path.join(BUILD, "bench", "quicksort")
SSSP = os.path.join(BUILD, "bench", "sssp")


@pytest.fixture
def fast_dir(monkeypatch):
    """A private PROSPER_FAST_DIR on a memory file system, for this test alone."""
    d = tempfile.mkdtemp(prefix="prosper-test-fast-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    monkeypatch.setenv("PROSPER_FAST_DIR", d)
    yield d
    subprocess.run(["rm", "-rf", d])


def fast_pools(fast_dir):
    mine = os.path.join(fast_dir, f"prosper-{os.geteuid()}")
    return sorted(os.listdir(mine)) if os.path.isdir(mine) else []


def torture(*prog, kills, pool_dir, extra=()):
    r = prosper("torture", "--kills", kills, "--json", "--pool-dir", pool_dir, *extra, "--", *prog, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("prog", [QUICKSORT, SSSP, os.path.join(BUILD, "bench", "kv")])
def test_power_cuts_resume_from_the_durable_pool(tmp_path, prog):
    """Every kill also drops the fast pool: each resume starts from the last durable copy.  A kill
    before the first durable copy is a fresh start, and how many kills land there follows the
    machine's load (3 of 8 under load): 10 kills, at least 2 of them resumed."""
    res = torture(prog, kills=10, pool_dir=str(tmp_path), extra=["--power-cut", "--durable-every", "50ms"])
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 2, res


def test_kills_of_everything_resume_from_the_fast_pool(tmp_path):
    res = torture(SSSP, kills=8, pool_dir=str(tmp_path), extra=["--durable-every", "200ms"])
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4, res


def _killed(pool, prog, cwd, out, epoch=3, extra=()):
    p = subprocess.Popen([PROSPER, "run", *extra, "--pool", pool, "--", *prog], cwd=cwd, stdout=out,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    kill_at_epoch(p, pool, epoch)


def test_run_says_where_checkpoints_go_and_what_survives(tmp_path, fast_dir):
    r = prosper("run", "--pool", tmp_path / "t.prosper", "--", "/bin/true")
    assert r.returncode == 0
    assert "durable every 1 s in" in r.stderr and fast_dir in r.stderr, r.stderr
    r = prosper("run", "--durable-every", "0", "--pool", tmp_path / "z.prosper", "--", "/bin/true")
    assert r.returncode == 0 and "every one durable" in r.stderr, r.stderr
    if os.path.isdir("/dev/shm"):
        shm = os.path.join(fast_dir, "m.prosper")
        r = prosper("run", "--pool", shm, "--", "/bin/true")
        assert r.returncode == 0 and "not a power cut" in r.stderr, r.stderr
    assert fast_pools(fast_dir) == []   # every run ended: nothing left in memory


def test_inspect_shows_the_latest_and_the_durable_checkpoint_then_resume(tmp_path, fast_dir):
    native = subprocess.run([SSSP], capture_output=True, check=True).stdout
    pool = str(tmp_path / "s.prosper")
    with open(tmp_path / "out", "wb") as f:
        _killed(pool, [SSSP], tmp_path, f, epoch=5)
        info = json.loads(prosper("inspect", "--json", pool).stdout)
        assert info["fast_pool"] and info["fast_pool"]["epoch"] >= 5, info
        assert 1 <= info["epoch"] <= info["fast_pool"]["epoch"]     # the first checkpoint is copied at once
        assert 0 < info["disk_bytes"] < info["file_bytes"] // 100      # sparse
        assert "the latest checkpoints are in the fast pool" in prosper("inspect", pool).stdout
        r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out").read_bytes() == native
    assert fast_pools(fast_dir) == []
    again = prosper("resume", "--pool", pool)
    assert again.returncode == 2 and "finished" in again.stderr


def test_an_unusable_fast_pool_is_kept_aside_and_the_durable_one_resumes(tmp_path, fast_dir):
    native = subprocess.run([SSSP], capture_output=True, check=True).stdout
    pool = str(tmp_path / "s.prosper")
    with open(tmp_path / "out", "wb") as f:
        _killed(pool, [SSSP], tmp_path, f, epoch=4)
        (fast,) = fast_pools(fast_dir)
        path = os.path.join(fast_dir, f"prosper-{os.geteuid()}", fast)
        with open(path, "r+b") as g:
            g.seek(64)
            g.write(os.urandom(256))
        r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "is not usable" in r.stderr and "resuming from the durable checkpoint" in r.stderr, r.stderr
    assert (tmp_path / "out").read_bytes() == native
    assert fast_pools(fast_dir) == [fast + ".unusable"]


def test_fresh_removes_the_fast_pool_too(tmp_path, fast_dir):
    pool = str(tmp_path / "q.prosper")
    with open(os.devnull, "wb") as f:
        _killed(pool, [SSSP], tmp_path, f)
    assert len(fast_pools(fast_dir)) == 1
    refused = prosper("run", "--pool", pool, "--", SSSP)
    assert refused.returncode == 2 and "already holds a checkpoint" in refused.stderr
    r = prosper("run", "--fresh", "--pool", pool, "--", "/bin/true")
    assert r.returncode == 0, r.stderr
    assert fast_pools(fast_dir) == []


def test_a_refused_resume_leaves_no_fast_pool(tmp_path, fast_dir):
    """A resume of a finished program is refused; the fast pool it made from the durable pool to
    look (there was none: the run ended cleanly) is removed again -- it was an 8 GiB sparse file in
    /dev/shm at every such refusal.  A killed run's fast pool, the newest state, is kept through a
    refusal."""
    pool = str(tmp_path / "f.prosper")
    r = prosper("run", "--pool", pool, "--", QUICKSORT, "30")
    assert r.returncode == 0, r.stderr
    assert fast_pools(fast_dir) == []
    again = prosper("resume", "--pool", pool)
    assert again.returncode == 2 and "the program finished" in again.stderr, again.stderr
    assert fast_pools(fast_dir) == []
    killed, prog = str(tmp_path / "k.prosper"), str(tmp_path / "sssp")
    shutil.copy(SSSP, prog)
    with open(os.devnull, "wb") as f:
        _killed(killed, [prog], tmp_path, f)
    kept = fast_pools(fast_dir)
    assert len(kept) == 1
    with open(prog, "ab") as f:
        f.write(b"\0")  # the executable changed since the checkpoint: refused after the tiers opened
    r = prosper("resume", "--pool", killed)
    assert r.returncode == 2 and "changed" in r.stderr, r.stderr
    assert fast_pools(fast_dir) == kept


def test_every_checkpoint_durable_has_no_fast_pool(tmp_path, fast_dir):
    native = subprocess.run([SSSP], capture_output=True, check=True).stdout
    pool = str(tmp_path / "d.prosper")
    with open(tmp_path / "out", "wb") as f:
        _killed(pool, [SSSP], tmp_path, f, extra=["--durable-every", "0"])
        assert fast_pools(fast_dir) == []
        r = subprocess.run([PROSPER, "resume", "--durable-every", "0", "--pool", pool], cwd=tmp_path, stdout=f,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out").read_bytes() == native


def test_a_resume_with_every_checkpoint_durable_takes_the_newer_fast_pool(tmp_path, fast_dir):
    """Run with two tiers, resume with --durable-every 0: the fast pool's state is copied into the
    pool first (it is newer), then removed."""
    native = subprocess.run([SSSP], capture_output=True, check=True).stdout
    pool = str(tmp_path / "s.prosper")
    with open(tmp_path / "out", "wb") as f:
        _killed(pool, [SSSP], tmp_path, f, epoch=6)
        r = subprocess.run([PROSPER, "resume", "--durable-every", "0", "--pool", pool, "--stats-json",
                            str(tmp_path / "st.json")], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out").read_bytes() == native
    assert fast_pools(fast_dir) == []


@pytest.mark.parametrize("value", ["abc", "-1", "2h", "1x"])
def test_durable_every_must_be_a_duration(tmp_path, value):
    r = prosper("run", "--durable-every", value, "--pool", tmp_path / "u.prosper", "--", "/bin/true")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--durable-every" in r.stderr, r.stderr


def test_nvm_memory_survives_power_cuts(tmp_path):
    """NVM-resident regions (direct mode) live in the fast pool and are copied like the rest; after a
    power cut the fast pool made from the durable one is what the program maps again."""
    nvmuser = os.path.join(BUILD, "tests", "supervisor", "nvmuser")
    res = torture(nvmuser, "mixed", "2", "2000", kills=8, pool_dir=str(tmp_path),
                  extra=["--seed", "5", "--power-cut", "--durable-every", "100ms"])
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4, res
