"""Multi-threaded programs under prosper run / resume: every thread is stopped for a checkpoint (a
consistent cut), every thread's stack is saved, and a resume recreates every thread with its own
TLS, stack, registers and signal mask; threads blocked in futex waits, threads that come and go
between checkpoints, and a thread writing into another thread's stack all survive SIGKILL."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, PROSPER, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"
SUP = os.path.join(BUILD, "src", "supervisor", "prosper-supervise")
THREADCHECK = os.path.join(BUILD, "tests", "supervisor", "threadcheck")
THREADBURST = os.path.join(BUILD, "tests", "supervisor", "threadburst")
THREADCROWD = os.path.join(BUILD, "tests", "supervisor", "threadcrowd")
ALTSTACK = os.path.join(BUILD, "tests", "supervisor", "altstack")
COROUTINE = os.path.join(BUILD, "tests", "supervisor", "coroutine")


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


def test_each_threads_alternate_signal_stack_survives_kills():
    """Two threads, each with an alternate signal stack of its own, send themselves signals whose
    handler counts whether it ran on it: a resume sets every thread's stack again (asked of each
    thread by an injected sigaltstack, src/supervisor/objects/altstack.h), so the counts stay the native
    ones ("off 0 0"); without it the first signal after a resume runs on the thread's own stack."""
    res = torture(ALTSTACK, "300000", kills=20 if LONG else 10)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 5


def test_a_coroutine_stack_above_live_data_is_not_taken_for_a_thread_stack():
    """A thread runs a coroutine on a stack at the top of a mapping whose lower part holds a table
    -- the mapped part of a PROT_NONE reservation, shaped like a glibc thread stack, as a Go heap
    arena with goroutine stacks is.  Its thread descriptor is elsewhere, so the mapping is saved
    whole, table included (taken for a stack, everything below the coroutine's SP was dropped:
    the output differed after the first resume)."""
    res = torture(COROUTINE, "300000", kills=20 if LONG else 8)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4


GO_PROGRAM = """package main

import "fmt"

func main() {
	m := map[int]int{}
	s := 0
	for i := 0; i < 20000000; i++ {
		m[i%100003] += i
		s += m[(i*7)%100003] % 13
	}
	fmt.Println(len(m), s)
}
"""


def test_a_go_program_survives_kills(tmp_path):
    """A Go program linked against libc, through the preloaded shim (Go's static builds, without
    it: test_static.py): its runtime's threads each run on an alternate signal stack, its
    goroutines on stacks inside its heap arenas, and its threads are preempted by signals every
    10 ms."""
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if not go:
        pytest.skip("no Go toolchain")
    (tmp_path / "main.go").write_text(GO_PROGRAM)
    (tmp_path / "go.mod").write_text("module sieve\n\ngo 1.21\n")
    env = dict(os.environ, CGO_ENABLED="1", GOCACHE=str(tmp_path / "cache"), GOPATH=str(tmp_path / "gopath"),
               GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    built = subprocess.run([go, "build", "-ldflags=-linkmode=external", "-o", "prog", "."], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=600)
    if built.returncode != 0:
        pytest.skip("the Go toolchain cannot build a cgo program here: " + built.stderr[-200:])
    res = torture(str(tmp_path / "prog"), kills=20 if LONG else 10)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 5


def test_a_thread_that_is_gone_before_its_clone_event_is_read_is_not_a_lost_child(tmp_path, pool_dir):
    """A thread can be stopped, let go, run and exit before its creator's clone event is read.
    The event then names a task that is gone: that once stopped checkpointing ("cannot follow the
    program's child process", in 4 of 20 runs of this program) and, when it fell inside a cut,
    held the program stopped for good waiting for that task (1 of the 20)."""
    native = subprocess.run([THREADBURST, "20000"], capture_output=True, text=True, timeout=60)
    pool = os.path.join(pool_dir, "p")
    for attempt in range(4):
        stats = tmp_path / f"s{attempt}.json"
        r = subprocess.run([SUP, "run", "--fresh", "--interval", "1", "--pool", pool, "--stats-json", str(stats),
                            "--", THREADBURST, "20000"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout == native.stdout, r.stderr
        st = json.loads(stats.read_text())
        assert st["disabled"] is None, r.stderr
        assert st["checkpoints"] >= 3 and st["cuts_given_up"] == 0, st
        # Each thread's stack is a region of the pool while it lives, 8 MiB and a 16 MiB log of
        # which a few KiB are written: the file holds those (it grew to 2.4-4.9 GB per run when
        # every such region took its space whole).
        assert os.stat(pool).st_blocks * 512 < 256 << 20, os.stat(pool).st_blocks * 512


def test_hundreds_of_threads_fit_the_default_pool(tmp_path, pool_dir):
    """450 threads alive at once: each stack is a region of 128 slots of the default pool's
    131072, and its log starts at one slot (it took 257, and 400 threads filled the pool:
    "pool is full").  They live a second: on a loaded machine 0.3 s held only two checkpoints
    of them."""
    stats = tmp_path / "s.json"
    r = subprocess.run([SUP, "run", "--pool", os.path.join(pool_dir, "p"), "--stats-json", str(stats), "--",
                        THREADCROWD, "450", "1000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout == "joined 450\n", r.stderr
    st = json.loads(stats.read_text())
    assert st["disabled"] is None, r.stderr
    assert st["checkpoints"] >= 3 and st["mean_threads"] > 100, st  # the crowd lives most of the run


def test_threads_that_come_and_go_by_thousands_survive_kills():
    res = torture(THREADBURST, "4000", kills=20 if LONG else 10)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 5


@pytest.mark.parametrize("tracker,copy", [("page", "stop"), ("diff", "stop"), ("full", "stop"), ("diff", "precopy")])
def test_every_checkpoint_of_every_thread_equals_live_memory(tmp_path, pool_dir, tracker, copy):
    """The soundness oracle with threads; the writes into a foreign stack are seen by every tracker,
    also when most pages are read by a pass while the threads run (--copy precopy)."""
    stats = tmp_path / "s.json"
    r = subprocess.run([SUP, "run", "--verify", "--interval", "2", "--stack-tracker", tracker, "--heap-tracker",
                        tracker, "--copy", copy, "--pool", os.path.join(pool_dir, "p"), "--stats-json", str(stats),
                        "--", THREADCHECK, "150"], capture_output=True, text=True, timeout=300)
    native = subprocess.run([THREADCHECK, "150"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == native.stdout
    st = json.loads(stats.read_text())
    assert st["disabled"] is None and st["checkpoints"] >= 10
    assert st["mismatches"] == 0 and st["verified_bytes"] > 0, r.stderr  # where they differ
    assert st["mean_threads"] > 1
    assert (st["precopy_bytes"] > 0) == (copy == "precopy")


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


def _torture_ids(*prog, kills, host_pids=False):
    # a resume that hangs fails in minutes, not at torture's default of ten
    r = prosper("torture", "--kills", kills, "--timeout", 240, "--json", *(["--host-pids"] if host_pids else []),
                "--", *prog, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= kills // 2, res


# Both ways: in the program's own pid namespace every thread gets its id back; with --host-pids
# (what a system without namespaces gets) the ids change and the known locks are retagged.
@pytest.mark.parametrize("host_pids", [False, True], ids=["own-ids", "host-pids"])
def test_a_kill_inside_dlopen_resumes(host_pids):
    """Most of dlopener's run is a library constructor inside dlopen(), the loader's recursive
    lock held: a resume gives the thread its id back, or the lock the thread's new id
    (lockowners.c); before either, every such resume hung in the loader's next lock."""
    d = os.path.join(BUILD, "tests", "supervisor")
    _torture_ids(os.path.join(d, "dlopener"), os.path.join(d, "libslowinit.so"), "8", kills=12, host_pids=host_pids)


@pytest.mark.parametrize("host_pids", [False, True], ids=["own-ids", "host-pids"])
def test_a_robust_mutex_held_across_a_checkpoint_unlocks_after_a_resume(host_pids):
    """Two threads hold a robust (error-checking) mutex each across checkpoints and unlock it: as
    natively after every resume (with the old ids left in place: EPERM, then a lock that waits
    forever)."""
    _torture_ids(os.path.join(BUILD, "tests", "supervisor", "lockowner"), "6", kills=20, host_pids=host_pids)


def test_an_error_checking_mutex_held_across_a_checkpoint_unlocks_after_a_resume():
    """The same with mutexes that are not robust: no list names them, so only the thread's old id
    makes the unlock after a resume succeed -- the program's own pid namespace gives it back.
    (With --host-pids this program prints "unlock EPERM" and hangs: docs/limitations.md.)"""
    _torture_ids(os.path.join(BUILD, "tests", "supervisor", "lockowner"), "6", "plain", kills=20)


IDS_PROGRAM = r"""
import ctypes, os, sys, threading, time
# a pid file, as daemons write one: after a resume it must still name this process
pidfile = sys.argv[1]
if not os.path.exists(pidfile):
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))
go = threading.Event()
tids = []
def worker(n):
    # a thread name, as pthread_setname_np gives one
    ctypes.CDLL(None).prctl(15, f"worker-{n}".encode(), 0, 0, 0)  # PR_SET_NAME
    tids.append(threading.get_native_id())
    go.wait()
ts = [threading.Thread(target=worker, args=(n,)) for n in range(2)]
for t in ts:
    t.start()
while len(tids) < 2:
    time.sleep(0.01)
for step in range(60):
    pid = os.getpid()
    named = int(open(pidfile).read())
    try:
        os.kill(named, 0)
        alive = 1
    except ProcessLookupError:
        alive = 0
    seen = int(open(f"/proc/{pid}/stat").read().split()[0])  # /proc/<getpid()> is this process
    # what ps shows: the command line and the names of the process and its threads
    cmdline = open(f"/proc/{pid}/cmdline").read().split("\0")[:-1]
    names = sorted(open(f"/proc/{pid}/task/{t}/comm").read().strip() for t in os.listdir(f"/proc/{pid}/task"))
    print(step, pid, threading.get_native_id(), *sorted(tids), named, alive, seen, *names, *cmdline, flush=True)
    time.sleep(0.03)
go.set()
for t in ts:
    t.join()
"""


def _ids_run(tmp_path, pool_dir, *flags):
    """Run the ids program, kill it three times and resume it; its printed lines and the last
    resume's statistics."""
    from conftest import kill_at_epoch
    prog_path = tmp_path / "ids.py"
    prog_path.write_text(IDS_PROGRAM)
    prog = ["/usr/bin/python3", str(prog_path), str(tmp_path / "ids.pid")]
    pool, out, stats = os.path.join(pool_dir, "ids.prosper"), tmp_path / "out", tmp_path / "s.json"
    # with the system's ids the file changes are not seen: this program changes none but its stdout
    trust = ["--trust-files"] if "--host-pids" in flags else []
    with open(out, "wb") as f:
        p = subprocess.Popen([PROSPER, "run", "--pool", pool, *flags,
                              "--", *prog], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE,
                             start_new_session=True)
        kill_at_epoch(p, pool, 20)
        for _ in range(3):
            epoch = json.loads(prosper("inspect", "--json", pool).stdout)["epoch"]
            p = subprocess.Popen([PROSPER, "resume", "--pool", pool,
                                  *flags, *trust], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE, start_new_session=True)
            kill_at_epoch(p, pool, epoch + 20)
        r = subprocess.run([PROSPER, "resume", "--pool", pool, *flags, *trust,
                            "--stats-json", stats], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE, text=True,
                           timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [line.split() for line in out.read_text().splitlines()]
    assert {int(line[0]) for line in lines} == set(range(60)), lines
    return lines, json.loads(stats.read_text()), r.stderr


def test_a_resume_gives_the_program_its_process_and_thread_ids_back(tmp_path, pool_dir):
    """In its own pid namespace the program sees, after each of several resumes, the process id,
    thread ids and pid file it had: every printed line names the same ids, /proc/<getpid()> is
    itself, and the statistics count no changed id."""
    lines, st, err = _ids_run(tmp_path, pool_dir)
    assert st["pid_namespace"] is True and st["ids_changed"] == 0, st
    ids = {tuple(line[1:]) for line in lines}
    assert len(ids) == 1, ids
    pid, main_tid, t1, t2, named, alive, seen, *names_and_cmdline = next(iter(ids))
    assert pid == main_tid == named == seen and alive == "1" and len({pid, t1, t2}) == 3, ids
    # ps shows the same after the resumes: the program's names, its command line
    assert names_and_cmdline == ["python3", "worker-0", "worker-1", "/usr/bin/python3", str(tmp_path / "ids.py"),
                                 str(tmp_path / "ids.pid")], ids
    assert st["names_restored"] is True, st
    assert "ids changed" not in err, err


def test_with_host_pids_the_ids_change_and_it_is_said(tmp_path, pool_dir):
    """--host-pids (what a system without pid namespaces gets): the ids change at each resume, the
    statistics count them and stderr says so; the program still runs to its end."""
    lines, st, err = _ids_run(tmp_path, pool_dir, "--host-pids")
    assert st["pid_namespace"] is False and st["ids_changed"] == 3, st
    assert "ids changed (--host-pids)" in err, err
    assert len({line[1] for line in lines}) >= 2, lines
