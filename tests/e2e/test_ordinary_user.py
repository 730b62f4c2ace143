"""An ordinary user runs and resumes as root does (docs/run-resume.md "An ordinary user"): the
system's `nobody` -- no capabilities, no supplementary groups -- with vm.unprivileged_userfaultfd
left as the system has it.  Its supervisor makes a user namespace of its own for the program's
ids (src/supervisor/base/userns.h) and tracks writes on a userfaultfd of user mode only (a resume
then fills memory before the program runs); these tests show the guarantees are the same:
tortures identical after kills, threads and process trees, the pool on a disk with power cuts,
the oracle at 0 mismatches; and what the user's process does with the namespace's processes.
The tortures are those of bench/scripts/programs_as_started.py (tests/e2e/programs.py), with
three kills each here."""
import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import programs
from conftest import BUILD, PROSPER, kill_at_epoch

NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
SUP = os.path.join(BUILD, "tests", "supervisor")


@pytest.fixture
def own_dir():
    """A folder on the disk that belongs to `nobody` (its files, its pools).  A pool left by a
    kill or a refused resume has a fast pool in memory (docs/durability.md): removed with it."""
    d = tempfile.mkdtemp(prefix="prosper-nobody-")
    u = pwd.getpwnam("nobody")
    os.chown(d, u.pw_uid, u.pw_gid)
    yield d
    for pool in glob.glob(os.path.join(d, "**", "*.prosper"), recursive=True):
        r = as_nobody(PROSPER, "inspect", "--json", pool, cwd=d)
        fast = json.loads(r.stdout)["fast_pool"] if r.returncode == 0 else None
        if fast:
            os.unlink(fast["path"])
    shutil.rmtree(d, ignore_errors=True)


def as_nobody(*argv, cwd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run([*NOBODY, *map(str, argv)], cwd=cwd, **kw)


def torture_as_nobody(d, prog, kills, extra=(), path=None):
    env = dict(os.environ, PATH=path) if path else None
    r = as_nobody(PROSPER, "torture", "--kills", kills, "--timeout", 240, "--json", *extra, "--", *prog, cwd=d,
                  timeout=900, env=env)
    assert r.returncode in (0, 1) and r.stdout.strip(), r.stderr[-3000:]  # an exception of torture's: its trace
    res = json.loads(r.stdout)
    assert res["identical"], (res["differences"], r.stderr[-2000:])
    assert res["resumes"] >= kills // 2, res
    return res


PATH = "/usr/bin:/bin"


def _started(d):
    """programs_as_started.py's programs, with their own ids (the --host-pids case is root's
    fallback, expected to time out), and threaded programs: a bench program's pool of threads,
    threads that come and go.  {name: (argv, extra torture options, PATH)}"""
    cases = {name: (prog, extra, path) for name, prog, extra, path in programs.as_started(d, PATH, BUILD)
             if "--host-pids" not in extra}
    cases["threads: pr_mt"] = ([os.path.join(BUILD, "bench", "pr_mt"), "18", "3"], [], PATH)
    cases["threads come and go (threadcheck)"] = ([os.path.join(SUP, "threadcheck")], [], PATH)
    return cases


with tempfile.TemporaryDirectory() as _names:
    CASES = sorted(_started(_names))


@pytest.mark.parametrize("case", CASES)
def test_tortured_as_an_ordinary_user(own_dir, case):
    """Three kills each (bench/results/programs_as_started_ordinary_user.md: more)."""
    prog, extra, path = _started(own_dir)[case]
    torture_as_nobody(own_dir, prog, kills=3, extra=extra, path=path)


def test_power_cuts_with_the_pool_on_a_disk_as_an_ordinary_user(own_dir):
    """Two tiers in places the user owns: the fast pool in /dev/shm/prosper-UID, the pool on the
    project's disk; every kill also drops the fast pool."""
    disk = os.path.join(own_dir, "pools")
    as_nobody("mkdir", disk, cwd=own_dir, check=True)
    res = torture_as_nobody(own_dir, [os.path.join(BUILD, "bench", "quicksort")], kills=8,
                            extra=["--pool-dir", disk, "--power-cut", "--durable-every", "50ms"])
    assert res["checkpoints"] > 0, res


def test_the_oracle_as_an_ordinary_user(own_dir):
    """`--verify` unprivileged, before and after a kill: every checkpoint equals live memory.  The
    resume filled memory before the program ran (a userfaultfd of user mode only), in the
    program's own pid namespace."""
    prog = [os.path.join(SUP, "threadcheck"), "1500"]  # 1.7 s natively: killed at epoch 10
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    pool = os.path.join(own_dir, "v.prosper")
    out = os.path.join(own_dir, "out")
    r = as_nobody("sh", "-c", f'exec "$@" > {out}', "sh", PROSPER, "run", "--pool", pool, "--verify",
                  "--stats-json", "run.json", "--", *prog, cwd=own_dir, timeout=300)
    assert r.returncode == 0, r.stderr
    st = json.loads(open(os.path.join(own_dir, "run.json")).read())
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0 and st["pid_namespace"], st
    os.unlink(pool)
    with open(out, "wb") as f:
        p = subprocess.Popen([*NOBODY, PROSPER, "run", "--pool", pool, "--", *prog], cwd=own_dir, stdout=f,
                             stderr=subprocess.PIPE, start_new_session=True)
        kill_at_epoch(p, pool, 10, as_user=NOBODY)
    r = as_nobody("sh", "-c", f'exec "$@" >> {out}', "sh", PROSPER, "resume", "--pool", pool, "--verify",
                  "--stats-json", "resume.json", cwd=own_dir, timeout=300)
    assert r.returncode == 0, r.stderr
    st = json.loads(open(os.path.join(own_dir, "resume.json")).read())
    assert st["resumed"] and st["verified_bytes"] > 0 and st["mismatches"] == 0, st
    assert not st["restore_lazy"] and st["pid_namespace"], st
    assert open(out, "rb").read() == native


IDS = r"""
import os, sys
with open("mine", "w") as f:
    f.write("x")
print(os.getuid(), os.getgid(), os.getgroups(), os.stat("/").st_uid, flush=True)
"""


def test_the_program_is_its_user_and_its_files_are_the_users(own_dir):
    """In the user's namespace the program's uid and gid are the user's own (mapped to
    themselves), it has no supplementary groups, a file of root's shows the overflow id, and what
    it creates belongs to the user on the system."""
    u = pwd.getpwnam("nobody")
    r = as_nobody(PROSPER, "run", "--pool", "p.prosper", "--", "python3", "-c", IDS, cwd=own_dir, timeout=120)
    assert r.returncode == 0, r.stderr
    overflow = int(open("/proc/sys/kernel/overflowuid").read())
    assert r.stdout.split() == [str(u.pw_uid), str(u.pw_gid), "[]", str(overflow)], r.stdout
    st = os.stat(os.path.join(own_dir, "mine"))
    assert (st.st_uid, st.st_gid) == (u.pw_uid, u.pw_gid)


def _nobodys_processes(marker):
    r = subprocess.run(["pgrep", "-u", "nobody", "-f", marker], capture_output=True, text=True)
    return r.stdout.split()


def test_killing_the_users_process_alone_ends_the_program(own_dir):
    """`kill -9` of the process the user started (not of its group): the supervisor and the
    program inside the namespace end with it -- nothing runs on unsupervised."""
    marker = "31.4159"
    p = subprocess.Popen([*NOBODY, PROSPER, "run", "--pool", "p.prosper", "--", "sh", "-c",
                          f"while :; do sleep {marker}; done"], cwd=own_dir, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 30
    while not _nobodys_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _nobodys_processes(marker), "the program never started"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 5
    while _nobodys_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _nobodys_processes(marker) == []


def test_a_background_child_outlives_the_command_as_natively(own_dir):
    """The program starts a child in the background and exits: `prosper run` returns at once, and
    the child goes on to finish its work afterwards (the namespace stays while it runs)."""
    prog = ["sh", "-c", "(sleep 3; echo late > late.txt) > /dev/null 2>&1 & echo started"]
    r = as_nobody(PROSPER, "run", "--pool", "p.prosper", "--", *prog, cwd=own_dir, timeout=60)
    assert r.returncode == 0 and r.stdout == "started\n", r.stderr
    # returned before the child's work was done (had it waited for the namespace to empty, the
    # file would be there)
    assert not os.path.exists(os.path.join(own_dir, "late.txt"))
    deadline = time.monotonic() + 10
    while not os.path.exists(os.path.join(own_dir, "late.txt")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open(os.path.join(own_dir, "late.txt")).read() == "late\n"


INOTIFY_WAIT = r"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
assert libc.inotify_add_watch(fd, b".", 0x100) == 1
t = 0
for i in range(60000000):
    t = (t * 31 + i) % 1000003
print(t)
"""


def test_an_inotify_watch_an_ordinary_user_cannot_name_refuses_the_resume(own_dir):
    """The cut names an inotify watch's file by opening its handle, which needs
    CAP_DAC_READ_SEARCH (fd_inotify.c): an ordinary user's run warns once and its checkpoint's
    resume is refused with fd-unsupported -- never resumed with its watches missing."""
    prog = os.path.join(own_dir, "wait.py")
    with open(prog, "w") as f:
        f.write(INOTIFY_WAIT)
    pool = os.path.join(own_dir, "w.prosper")
    p = subprocess.Popen([*NOBODY, PROSPER, "run", "--pool", pool, "--", "/usr/bin/python3", prog], cwd=own_dir,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    kill_at_epoch(p, pool, 5, as_user=NOBODY)
    warned = [ln for ln in p.stderr.read().decode().splitlines() if "inotify" in ln]
    assert len(warned) == 1 and "CAP_DAC_READ_SEARCH" in warned[0], warned
    r = as_nobody(PROSPER, "resume", "--json", "--pool", pool, cwd=own_dir)
    assert r.returncode == 2, r.stderr
    refusal = json.loads([ln for ln in r.stderr.splitlines() if ln.startswith("{")][-1])
    assert refusal["refused"] == "fd-unsupported" and "inotify" in refusal["message"], refusal
