"""Shared fixtures: paths of the built tools and a runner for bin/prosper."""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PROSPER_BUILD", os.path.join(ROOT, "build"))
PROSPER = os.path.join(ROOT, "bin", "prosper")

# The suite's kills and counts of checkpoints count on a checkpoint every --interval: it runs at
# the fixed cadence unless a test gives --max-overhead (test_budget.py, which also runs the real
# default with this removed).  The default budget lengthens a costly program's interval.
os.environ.setdefault("PROSPER_MAX_OVERHEAD", "0")


def prosper(*args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run([PROSPER, *map(str, args)], **kw)


def kill_at_epoch(p, pool, epoch, as_user=()):
    """Wait until the pool of the supervised process p has committed `epoch`, then SIGKILL p's
    process group (p was started with start_new_session=True).  as_user: the command prefix that
    runs as the pool's owner (only its owner may inspect it)."""
    import json
    import signal
    import time
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        r = subprocess.run([*as_user, PROSPER, "inspect", "--json", pool], capture_output=True, text=True)
        # a pool on a disk: its latest checkpoints are in its fast pool (docs/durability.md)
        info = json.loads(r.stdout) if r.returncode == 0 else None
        if info and (info["fast_pool"] or info)["epoch"] >= epoch:
            break
        time.sleep(0.01)
    assert p.poll() is None, "the program ended before it could be killed"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    time.sleep(0.05)


@pytest.fixture
def pool_tool():
    path = os.path.join(BUILD, "src", "cli", "prosper-pool")
    assert os.access(path, os.X_OK), "build first: make build"
    return path


@pytest.fixture
def pool_dir(tmp_path):
    """A directory for pools on a memory file system when there is one: supervised runs commit
    every 10 ms, and a disk makes each commit wait for msync (tests of process death, not power
    loss, need no disk).  Removed afterwards."""
    import shutil
    import tempfile
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else str(tmp_path)
    d = tempfile.mkdtemp(prefix="prosper-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)
