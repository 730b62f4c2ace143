"""prosper run / prosper resume: programs killed with SIGKILL at random instants and resumed, again
and again, end with exactly the output (stdout, exit code, files) of a native run; bad input is
refused with one line and exit code 2, and nothing is lost.

Quick mode plans 20 kills per bench program; with the files, distribution and thread tests the
suite delivers well over 200 kills; PROSPER_LONG=1 plans 50 per program."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import programs
from conftest import BUILD, PROSPER, ROOT, kill_at_epoch, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"
KILLS = 50 if LONG else 20
BENCH = {
    "random": [], "stream": [], "sparse": [], "quicksort": [], "recursive": ["4"], "normal": [],
    "poisson": [], "pr": [], "sssp": [], "kv": [],
}
FILER = os.path.join(BUILD, "tests", "supervisor", "filer")


def torture(*prog, kills=KILLS, seed=1, pool_dir=None):
    where = ["--pool-dir", pool_dir] if pool_dir else []
    r = prosper("torture", "--kills", kills, "--seed", seed, "--json", *where, "--", *prog, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", sorted(BENCH))
def test_bench_program_survives_kills(name):
    res = torture(os.path.join(BUILD, "bench", name), *BENCH[name])
    assert res["identical"], res["differences"]
    # every kill was followed by a resume (or, before the first commit, a fresh start), but a last
    # one that landed after the program's exit was recorded; a program that reaches its end before
    # the last planned kill ends the series early
    assert res["kills"] >= KILLS * 3 // 4
    assert res["resumes"] + res["fresh_starts"] + res["exit_found_after_kill"] >= res["kills"], res
    assert res["resumes"] >= KILLS // 2 and res["kills_in_commit_window"] >= 1


@pytest.mark.parametrize("name", ["pr", "kv"])
def test_kills_land_around_the_precopy_pass(name):
    """--copy precopy: a kill can land during a pass (nothing of it is in the pool yet) or between
    it and its stop; every resume continues from a committed checkpoint."""
    r = prosper("torture", "--kills", KILLS // 2, "--copy", "precopy", "--interval", "3", "--json", "--",
                os.path.join(BUILD, "bench", name), *BENCH[name], timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["kills"] >= KILLS // 4 and res["resumes"] >= KILLS // 4


def test_pool_on_a_disk_file_system(tmp_path):
    """The default pool lives beside the program, on disk: two tiers (a fast pool in memory, copied
    into the pool every second); kills of the whole group resume from the fast pool."""
    res = torture(os.path.join(BUILD, "bench", "quicksort"), kills=6, pool_dir=str(tmp_path))
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 3


def test_files_fds_signals_and_sleeps_survive(tmp_path):
    """Input read by offset, output written to a file in the working directory, progress on stdout,
    a signal handler, sleeps interrupted by every checkpoint."""
    data = tmp_path / "in.bin"
    data.write_bytes(os.urandom(12 << 20))
    res = torture(FILER, str(data), "16384", kills=15)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 10


def test_interval_timers_survive(tmp_path):
    """A periodic ITIMER_REAL that the program waits on with pause(), then an alarm(): a resume
    arms both again with what was left of them at the checkpoint (timers.c); before, every
    resume waited in pause() forever."""
    r = prosper("torture", "--kills", KILLS, "--timeout", 240, "--json", "--", *programs.timers(tmp_path), timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= KILLS // 2, res


def test_pending_signals_survive():
    """Signals blocked and pending across checkpoints -- three queued realtime instances with their
    values, and one sent to a single thread -- are queued again at a resume, in order, with their
    siginfo (pending.c); before, every resume waited in sigwaitinfo forever."""
    r = prosper("torture", "--kills", KILLS, "--timeout", 240, "--json", "--",
                os.path.join(BUILD, "tests", "supervisor", "pendsig"), "8", timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= KILLS // 2, res


def test_resource_limits_survive(tmp_path):
    """A program that lowers its open-file limit (and its core size) and then hits the limit
    phase after phase: a resume sets the checkpoint's limits again (rlimits.c); before, the
    resumed program had the relaunch's limits and opened more files than natively."""
    r = prosper("torture", "--kills", KILLS, "--timeout", 240, "--json", "--", *programs.limits(tmp_path), timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= KILLS // 2, res


def test_a_limit_lowered_after_the_first_checkpoint_is_restored(tmp_path, pool_dir):
    """python3 lowers its open-file limit through setrlimit64 after the first checkpoint; a resume
    from a later checkpoint has the lowered limit (the shim once counted setrlimit and prlimit
    only, so the pool kept the limits of the first cut)."""
    prog = ["/usr/bin/python3", "-S", "-c", "import resource, time\n"
            "time.sleep(0.3)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
            "t = 0\n"
            "for i in range(30000000):\n    t = (t * 31 + i) % 1000003\n"
            "print(t, resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"]
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    assert native.split()[-1] == b"64"
    pool = os.path.join(pool_dir, "lim.prosper")
    out = tmp_path / "out"
    with open(out, "wb") as f:
        # epoch 40 is committed 0.4 s after the start at the earliest (a late checkpoint is only later):
        # after the setrlimit; the loop (~2.8 s natively) leaves a loaded machine time to get there
        _run_until_epoch(pool, prog, 40, tmp_path, f)
        r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE,
                           text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native


SIEVE_JAVA = """
public class Sieve {
    public static void main(String[] a) {
        int n = Integer.parseInt(a[0]);
        long total = 0;
        java.util.HashMap<Integer, Long> m = new java.util.HashMap<>();
        for (int round = 0; round < 40; round++) {
            boolean[] c = new boolean[n];
            int count = 0;
            for (int i = 2; i < n; i++)
                if (!c[i]) { count++; for (long j = (long) i * i; j < n; j += i) c[(int) j] = true; }
            total += count + round;
            m.put(round, total);
            if (round % 5 == 0) System.out.println(round + " " + count + " " + total);
        }
        System.out.println(m.size() + " " + total);
    }
}
"""

ASYNCIO_LOOP = """
import asyncio, hashlib
async def worker(i, q):
    h = hashlib.sha256()
    for k in range(24000):
        h.update(str(i * k).encode())
        if k % 500 == 0:
            await asyncio.sleep(0)
    await q.put((i, h.hexdigest()[:8]))
async def main():
    q = asyncio.Queue()
    for i in range(0, 400, 4):
        await asyncio.gather(*(worker(j, q) for j in range(i, i + 4)))
        while not q.empty():
            print(*(await q.get()), flush=True)
        await asyncio.sleep(0.001)
asyncio.run(main())
"""

EVENTFD_LOOP = """
import hashlib, os
sem = os.eventfd(0, os.EFD_SEMAPHORE)  # counts down by one per read
cnt = os.eventfd(7, os.EFD_NONBLOCK)   # read whole
dup = os.dup(cnt)                      # the same counter at a second number
h = hashlib.sha256()
for i in range(1, 3001):
    os.eventfd_write(sem, 2)
    a = os.eventfd_read(sem)
    os.eventfd_write(dup, i)
    b = os.eventfd_read(cnt) if i % 7 == 0 else 0
    for k in range(300):
        h.update(str(i * k + a + b).encode())
    if i % 300 == 0:
        print(i, a, b, h.hexdigest()[:12], flush=True)
os.set_blocking(sem, False)
left = 0
try:
    while True:
        os.eventfd_read(sem)
        left += 1
except BlockingIOError:
    pass
print("left", left, "pending", os.eventfd_read(cnt))
"""

NODE_LOOP = """
let n = 0, h = 0;
const t = setInterval(() => {
  for (let k = 0; k < 200000; k++) h = (h * 31 + k + n) % 1000003;
  n++;
  if (n % 50 === 0) console.log(n, h);
  if (n === 1000) { clearInterval(t); setImmediate(() => console.log("done", h)); }
}, 1);
"""

DISTRIBUTION = {
    # a calculator, a compressor working on files, interpreters running a script, a sort (its
    # helper threads' stacks lie side by side with its buffer, sized from the machine's memory and
    # mostly left empty: a resume maps them as one mapping, docs/run-resume.md)
    "bc": lambda d: ["/usr/bin/bc", "-lq", _write(d / "pi.bc", "scale=1400; 4*a(1)\n")],
    "sort": lambda d: ["/usr/bin/sort", _write(d / "text.txt", _text(16 << 20))],
    # a JVM: twenty threads, a heap it reserves large, and its hsperfdata file mapped shared and
    # written all the time (mapped again as it is at a resume); the source file is compiled in memory
    "java": lambda d: ["/usr/bin/java", _write(d / "Sieve.java", SIEVE_JAVA), "6000000"],
    # an asyncio event loop: an epoll instance watching a socketpair, remade at each resume
    "asyncio": lambda d: ["/usr/bin/python3", _write(d / "loop.py", ASYNCIO_LOOP)],
    # Node.js: libuv's loop holds an epoll instance and an eventfd (its async wake-up)
    "node": lambda d: ["/usr/bin/node", _write(d / "loop.js", NODE_LOOP)],
    "gzip": lambda d: ["/usr/bin/gzip", "-9", "-c", _write(d / "text.txt", _text(24 << 20))],
    "xz": lambda d: ["/usr/bin/xz", "-T1", "-6", "-c", _write(d / "text.txt", _text(6 << 20))],
    "python3": lambda d: ["/usr/bin/python3", "-S", "-c",
                          "n=0\nfor i in range(2,260000):\n"
                          "    if all(i%p for p in range(2,int(i**0.5)+1)): n+=1\n"
                          "    if i%20000==0: print(i, n, flush=True)\nprint(n)"],
    "perl": lambda d: ["/usr/bin/perl", "-e",
                       'my %h; for my $i (1..1500000) { $h{$i % 9973} += $i * $i % 7 } '
                       'print join(",", map { $h{$_} } sort { $a <=> $b } keys %h), "\\n"'],
}


def _text(n):
    words = [b"prosper", b"stack", b"epoch", b"commit", b"pool", b"resume", b"checkpoint", b"kill"]
    out, x = bytearray(), 12345
    while len(out) < n:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out += words[x % len(words)] + (b"\n" if x % 11 == 0 else b" ")
    return bytes(out[:n])


def _write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


@pytest.mark.parametrize("name", sorted(DISTRIBUTION))
def test_distribution_program_survives_kills(tmp_path, name):
    prog = DISTRIBUTION[name](tmp_path)
    if not os.access(prog[0], os.X_OK):
        pytest.skip(f"{prog[0]} is not installed")
    res = torture(*prog, kills=12)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4


def test_eventfds_survive_kills(tmp_path):
    """A counter and a semaphore eventfd (one of them at two numbers) come back with their count
    and mode at every resume: the output, which depends on every value read, is the native one."""
    res = torture("/usr/bin/python3", _write(tmp_path / "ev.py", EVENTFD_LOOP), kills=12)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4, res


EVENTFD_SHARED = """
import os
wake = os.eventfd(0)                      # the parent wakes its child: one counter in both
done = os.eventfd(0, os.EFD_SEMAPHORE)    # the child counts its rounds back
child = os.fork()
if child == 0:
    t = 0
    for i in range(400):
        t = (t * 31 + os.eventfd_read(wake)) % 1000003
        for k in range(50000):
            t = (t + k) % 1000003
        os.eventfd_write(done, 1)
    os._exit(t % 200)
s = 0
for i in range(400):
    os.eventfd_write(wake, i + 1)
    os.eventfd_read(done)
    s += i
    if i % 50 == 0:
        print(i, s, flush=True)
_, st = os.waitpid(child, 0)
print("child", os.waitstatus_to_exitcode(st))
"""


SIGNALFD_LOOP = """
import ctypes, os, signal, struct
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1, signal.SIGUSR2])
mask = ctypes.c_uint64((1 << (signal.SIGUSR1 - 1)) | (1 << (signal.SIGUSR2 - 1)))
fd = libc.signalfd(-1, ctypes.byref(mask), os.O_NONBLOCK)  # signals read as data
assert fd >= 0
t = 0
for i in range(1, 2001):
    os.kill(os.getpid(), signal.SIGUSR1 if i % 3 else signal.SIGUSR2)
    info = os.read(fd, 128)                 # struct signalfd_siginfo: ssi_signo first
    signo = struct.unpack_from("I", info)[0]
    for k in range(6000):
        t = (t * 31 + k + signo) % 1000003
    if i % 200 == 0:
        print(i, signo, t, flush=True)
try:
    os.read(fd, 128)
    print("more")
except BlockingIOError:
    print("none left")
"""


def test_a_signalfd_survives_kills(tmp_path):
    """A signalfd reading the program's own SIGUSR1 and SIGUSR2 as data (made again with its mask,
    non-blocking, at its number; the signals pending at a cut queued again): the output, which
    depends on every signal read, is the native one."""
    res = torture("/usr/bin/python3", _write(tmp_path / "sfd.py", SIGNALFD_LOOP), kills=12)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4, res


TIMERFD_LOOP = """
import ctypes, os, select, struct
libc = ctypes.CDLL(None, use_errno=True)
class Ts(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
class Its(ctypes.Structure):
    _fields_ = [("interval", Ts), ("value", Ts)]
MONOTONIC, BOOTTIME = 1, 7
tick = libc.timerfd_create(MONOTONIC, os.O_NONBLOCK)  # periodic, waited for in epoll
once = libc.timerfd_create(BOOTTIME, 0)               # a one-shot an hour ahead: stays armed
fired = libc.timerfd_create(MONOTONIC, os.O_NONBLOCK) # expired, never read: its expiration stays
assert min(tick, once, fired) >= 0
for fd, it in ((tick, Its(Ts(0, 5000000), Ts(0, 5000000))), (once, Its(Ts(0, 0), Ts(3600, 0))),
               (fired, Its(Ts(0, 0), Ts(0, 1)))):
    assert libc.timerfd_settime(fd, 0, ctypes.byref(it), None) == 0
ep = select.epoll()
ep.register(tick, select.EPOLLIN)
t = 0
for wakeup in range(1, 301):
    ep.poll()                                          # a timer lost or disarmed would wait forever
    assert struct.unpack("Q", os.read(tick, 8))[0] >= 1
    for k in range(3000):
        t = (t * 31 + k) % 1000003
    if wakeup % 50 == 0:
        print(wakeup, t, flush=True)
cur = Its()
libc.timerfd_gettime(tick, ctypes.byref(cur))
print("interval", cur.interval.s, cur.interval.ns)
libc.timerfd_gettime(once, ctypes.byref(cur))
print("one-shot armed", 3000 < cur.value.s < 3600, cur.interval.s)
print("expired unread", struct.unpack("Q", os.read(fired, 8))[0])
"""


def test_timerfds_survive_kills(tmp_path):
    """An event loop's timers: a periodic timerfd waited for in epoll, a one-shot an hour ahead on
    another clock, one that expired unread.  Each comes back armed for the time it had left, with
    its interval and its unread expiration (fd_timerfd.c): the loop never waits forever, the
    one-shot is still armed, the expiration is read at the end."""
    res = torture("/usr/bin/python3", _write(tmp_path / "tfd.py", TIMERFD_LOOP), kills=12)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4, res


POSIX_TIMERS = """
import ctypes, os, signal, threading, time
librt = ctypes.CDLL("librt.so.1", use_errno=True)
libc = ctypes.CDLL(None, use_errno=True)
class Ts(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
class Its(ctypes.Structure):
    _fields_ = [("interval", Ts), ("value", Ts)]
class Sigevent(ctypes.Structure):
    _fields_ = [("value", ctypes.c_uint64), ("signo", ctypes.c_int), ("notify", ctypes.c_int),
                ("tid", ctypes.c_int), ("pad", ctypes.c_int * 11)]
MONOTONIC, BOOTTIME, SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID = 1, 7, 0, 1, 4
def make(clock, ev):
    tid = ctypes.c_int(-1)
    assert libc.syscall(222, clock, ctypes.byref(ev), ctypes.byref(tid)) == 0   # timer_create
    return tid.value
def arm(t, interval_ns, value_ns):
    it = Its(Ts(interval_ns // 10**9, interval_ns % 10**9), Ts(value_ns // 10**9, value_ns % 10**9))
    assert libc.syscall(223, t, 0, ctypes.byref(it), None) == 0                 # timer_settime
def left(t):
    it = Its()
    assert libc.syscall(224, t, ctypes.byref(it)) == 0                          # timer_gettime
    return it
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1, signal.SIGUSR2])
tick = make(MONOTONIC, Sigevent(value=0x1234, signo=signal.SIGUSR1, notify=SIGEV_SIGNAL))
mine = make(MONOTONIC, Sigevent(value=7, signo=signal.SIGUSR2, notify=SIGEV_THREAD_ID, tid=threading.get_native_id()))
quiet = make(BOOTTIME, Sigevent(notify=SIGEV_NONE))          # an hour ahead, never notifies
arm(tick, 5000000, 5000000)
arm(mine, 0, 3600 * 10**9)
arm(quiet, 0, 3600 * 10**9)
t = 0
for n in range(1, 301):
    info = signal.sigwaitinfo([signal.SIGUSR1])              # a timer lost or disarmed: waits forever
    assert info.si_signo == signal.SIGUSR1
    for k in range(3000):
        t = (t * 31 + k) % 1000003
    if n % 50 == 0:
        print(n, t, flush=True)
print("ids", tick, mine, quiet)
it = left(tick)
print("tick interval", it.interval.s, it.interval.ns)
print("thread timer armed", 3000 < left(mine).value.s < 3600, "quiet armed", 3000 < left(quiet).value.s < 3600)
print("timers", sum(line.startswith("ID:") for line in open(f"/proc/{os.getpid()}/timers")))
"""


def test_posix_timers_survive_kills(tmp_path):
    """POSIX timers of three kinds (a periodic one signalling the process, one signalling a thread,
    one that never notifies, on two clocks): each made again with its id, armed for the time it
    had left (posixtimers.c); the loop waiting for the periodic one's signals never waits forever,
    the others are still armed and the program still has exactly three."""
    res = torture("/usr/bin/python3", _write(tmp_path / "ptimer.py", POSIX_TIMERS), kills=12)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4, res


INOTIFY_LOOP = """
import ctypes, os, select, shutil, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
IN_CREATE, IN_DELETE, IN_DONT_FOLLOW, IN_ATTRIB = 0x100, 0x200, 0x2000000, 0x4
d = os.path.join(sys.argv[1], "watched")
shutil.rmtree(d, ignore_errors=True)
for sub in ("gone", "with space", "plain"):
    os.makedirs(os.path.join(d, sub))
os.symlink("plain", os.path.join(d, "link"))
fd = libc.inotify_init1(os.O_NONBLOCK)
add = lambda path, mask: libc.inotify_add_watch(fd, os.path.join(d, path).encode(), mask)
first = add("gone", IN_CREATE)
libc.inotify_rm_watch(fd, first)                  # its number is not given again: a gap
spaced, plain = add("with space", IN_CREATE | IN_DELETE), add("plain", IN_CREATE)
link = add("link", IN_ATTRIB | IN_DONT_FOLLOW)     # the symbolic link itself, not its target
print("wds", first, spaced, plain, link, flush=True)
ep = select.epoll()
ep.register(fd, select.EPOLLIN)
def events():
    if not ep.poll(0.5):
        return []
    try:
        buf, out = os.read(fd, 4096), []
    except BlockingIOError:  # told readable, found empty: what was queued at the cut was lost
        return []
    while buf:
        wd, mask, _, n = struct.unpack_from("iIII", buf)
        out.append("%d:%x:%s" % (wd, mask, buf[16:16 + n].rstrip(b"\\0").decode()))
        buf = buf[16 + n:]
    return out
def seen(round, want):
    # the events read, as wanted; those a checkpoint was cut with are lost with it (only when left
    # unread past the cut's wait: docs/limitations.md): what is read is then the end of what was
    # wanted, and the round noted
    time.sleep(0.004)  # the events wait unread, so that many cuts fall due while they are queued
    got = events()
    if len(got) < len(want) and got == want[len(want) - len(got):]:
        with open(os.path.join(sys.argv[1], "lost"), "a") as f:
            f.write("%s\\n" % round)
        return want
    return got
print("start", seen("start", ["%d:8000:" % first]), flush=True)  # the removed watch's IN_IGNORED
for i in range(150):
    sub = ("with space", "plain")[i % 2]
    want = ["%d:100:f%d" % ((spaced, plain)[i % 2], i)]
    open(os.path.join(d, sub, "f%d" % i), "w").close()
    if i % 10 == 9:
        os.unlink(os.path.join(d, "with space", "f%d" % (i - 1)))
        os.lchown(os.path.join(d, "link"), os.getuid(), os.getgid())
        want += ["%d:200:f%d" % (spaced, i - 1), "%d:4:" % link]
    got = seen(i, want)
    print(i, got, flush=True)
    t = 0
    for k in range(20000):
        t = (t * 31 + k) % 1000003
"""


def test_inotify_watches_survive_kills(tmp_path):
    """An inotify instance with a gap in its watch numbers, a directory whose name holds a space and
    a symbolic link watched itself (fd_inotify.c): at each resume every watch is back under its own
    number with its mask, the program's epoll wait sees each event, and no event of the resume's own
    making (the IN_IGNORED of renumbering) is read.  Each round's events wait 4 ms unread: a cut
    due then waits for the program to read them, so none is lost -- unless the program left them
    unread past the cut's wait (a loaded machine), which the run warns of; a round lost so (the
    program notes it and goes on) needs such a warning."""
    prog = ["/usr/bin/python3", _write(tmp_path / "inw.py", INOTIFY_LOOP), str(tmp_path)]
    r = prosper("torture", "--kills", 12, "--seed", 1, "--json", "--keep", "--", *prog, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    try:
        assert res["identical"], res["differences"]
        assert res["resumes"] >= 4, res
        lost = (tmp_path / "lost").read_text().split() if (tmp_path / "lost").exists() else []
        warned = [a.name for a in Path(res["workdir"]).glob("attempt-*.stderr")
                  if "events the program has not read" in a.read_text()]
        assert len(lost) <= len(warned), (lost, warned)
    finally:
        shutil.rmtree(res["workdir"], ignore_errors=True)
        for p in glob.glob(res["pool"] + "*"):
            shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)


UNREAD_EVENTS = """
import ctypes, os, select, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
assert libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x100) == 1  # IN_CREATE
ep = select.epoll()
ep.register(fd, select.EPOLLIN)
for i in range(int(sys.argv[2])):
    open(os.path.join(sys.argv[1], "f%d" % i), "w").close()
    time.sleep(float(sys.argv[3]))  # the event waits unread
    print(i, ep.poll(1) != [] and len(os.read(fd, 4096)), flush=True)
    time.sleep(0.01)                 # and nothing is queued
"""


@pytest.mark.parametrize("unread_s, lost", [(0.02, False), (0.3, True)])
def test_a_cut_waits_for_queued_inotify_events_to_be_read(tmp_path, pool_dir, unread_s, lost):
    """Events a cut cannot keep (fdkind.h `unread`): a due cut waits while they are queued; one
    left unread past the wait (UNREAD_WAIT, 50 ms) is taken, the events counted lost and the run
    warned once."""
    (tmp_path / "w").mkdir()
    stats = tmp_path / "stats.json"
    prog = ["/usr/bin/python3", _write(tmp_path / "unread.py", UNREAD_EVENTS), str(tmp_path / "w"), "10", str(unread_s)]
    r = prosper("run", "--pool", os.path.join(pool_dir, "u.prosper"), "--stats-json", stats, "--", *prog, cwd=tmp_path,
                timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [w for i in range(10) for w in (str(i), "32")], r.stdout  # 16 + "f%d" padded to 16
    st = json.loads(stats.read_text())
    assert st["checkpoints"] >= 5 and st["cuts_put_off"] >= 5, st
    if lost:
        assert st["unread_lost_bytes"] >= 10 * 32, st
        assert r.stderr.count("events the program has not read for") == 1, r.stderr
    else:
        assert st["unread_lost_bytes"] == 0 and "not read" not in r.stderr, (st, r.stderr)


def test_an_inotify_watch_whose_file_is_gone_refuses_the_resume(tmp_path, pool_dir):
    """A directory a watch names is removed while the program is dead: the resume is refused with
    fd-gone, naming it, and nothing runs; made again, the resume goes on."""
    prog = ["/usr/bin/python3", _write(tmp_path / "inw.py", INOTIFY_LOOP), str(tmp_path)]
    pool = os.path.join(pool_dir, "inw.prosper")
    with open(tmp_path / "out", "wb") as f:
        p = _run_until_epoch(pool, prog, 5, tmp_path, f)
    p.stderr.close()
    before = (tmp_path / "out").read_bytes()
    os.rename(tmp_path / "watched" / "link", tmp_path / "watched" / "moved")
    r = prosper("resume", "--json", "--pool", pool, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    refusal = json.loads([ln for ln in r.stderr.splitlines() if ln.startswith("{")][-1])
    assert refusal["refused"] == "fd-file-gone" and "watched/link" in refusal["message"], refusal
    # nothing ran (the files' undo, stdout's cut back to the checkpoint among it, comes before the
    # checks of fds, which need the files as they were at the checkpoint)
    assert before.startswith((tmp_path / "out").read_bytes())
    os.rename(tmp_path / "watched" / "moved", tmp_path / "watched" / "link")
    with open(tmp_path / "out", "ab") as f:
        r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE,
                           timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out").read_text().splitlines()[-1].startswith("149 ")


IO_URING = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)      # struct io_uring_params, zeroed
ring = libc.syscall(425, 4, params)            # io_uring_setup
assert ring >= 0, ctypes.get_errno()
t = 0
for i in range(20000000):
    t = (t * 31 + i) % 1000003
print(t)
"""


def test_a_checkpoint_holding_an_io_uring_is_refused_not_resumed_broken(tmp_path, pool_dir):
    """An io_uring cannot be made again (fd_iouring.c): the run says so once, and a resume of its
    checkpoint is refused with fd-unsupported, nothing started -- before, the program was resumed
    with the fd closed."""
    prog = ["/usr/bin/python3", _write(tmp_path / "ring.py", IO_URING)]
    pool = os.path.join(pool_dir, "ring.prosper")
    with open(tmp_path / "out", "wb") as f:
        p = _run_until_epoch(pool, prog, 5, tmp_path, f)
    # (besides the file journal's line: the file changes an io_uring makes are not seen)
    warned = [ln for ln in p.stderr.read().decode().splitlines() if "is an io_uring" in ln]
    assert len(warned) == 1 and "UV_USE_IO_URING=0" in warned[0], warned
    r = prosper("resume", "--json", "--pool", pool, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    refusal = json.loads([ln for ln in r.stderr.splitlines() if ln.startswith("{")][-1])
    assert refusal["refused"] == "fd-unsupported" and "io_uring" in refusal["message"], refusal
    assert os.path.getsize(tmp_path / "out") == 0  # nothing ran


def test_an_eventfd_shared_by_a_parent_and_its_child_survives_kills(tmp_path):
    """Two eventfds a parent and its child share come back as one counter each, made before the
    child is forked again: the child reads what the parent writes, the parent waits for the child's
    rounds, across kills."""
    res = torture("/usr/bin/python3", _write(tmp_path / "evshared.py", EVENTFD_SHARED), kills=12)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 4, res


# ---------------------------------------------------------------- the user's way: prosper run / resume


def _run_until_epoch(pool, prog, epoch, cwd, stdout):
    """Start `prosper run`, wait until the pool has committed `epoch`, then SIGKILL its group."""
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", *prog], cwd=cwd, stdout=stdout,
                         stderr=subprocess.PIPE, start_new_session=True)
    kill_at_epoch(p, pool, epoch)
    return p


def test_run_kill_resume_kill_resume(tmp_path, pool_dir):
    prog = [os.path.join(BUILD, "bench", "sssp")]
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    pool = os.path.join(pool_dir, "sssp.prosper")
    out = tmp_path / "out"
    with open(out, "wb") as f:
        _run_until_epoch(pool, prog, 3, tmp_path, f)
        epoch = json.loads(prosper("inspect", "--json", pool).stdout)["epoch"]
        for _ in range(2):
            p = subprocess.Popen([PROSPER, "resume", "--pool", pool], cwd=tmp_path, stdout=f,
                                 stderr=subprocess.PIPE, start_new_session=True)
            kill_at_epoch(p, pool, epoch + 3)
            epoch = json.loads(prosper("inspect", "--json", pool).stdout)["epoch"]
        r = subprocess.run([PROSPER, "resume", "--pool", pool, "--stats-json", str(tmp_path / "s.json")],
                           cwd=tmp_path, stdout=f, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native
    st = json.loads((tmp_path / "s.json").read_text())
    assert st["resumed"] and st["restored_bytes"] > 0 and st["checkpoints"] >= 1
    # its heap and anonymous mappings are made anew and filled by UFFDIO_COPY, not by writes
    assert 0 < st["restore_copied_bytes"] <= st["restored_bytes"], st
    # the program finished: a resume now would replay its end, so it is refused
    again = prosper("resume", "--pool", pool)
    assert again.returncode == 2 and "finished" in again.stderr and again.stderr.count("\n") == 1


def test_a_resume_goes_on_with_the_runs_checkpoint_options(tmp_path, pool_dir):
    """The run's interval, copy mode, trackers and metadata mode are kept in the pool: a resume
    without options checkpoints as the run did (it once went back to every default), and an
    option a resume is given stays for the resumes after it."""
    prog = [os.path.join(BUILD, "bench", "pr"), "18", "120"]
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    pool = os.path.join(pool_dir, "pr.prosper")
    out, stats = tmp_path / "out", tmp_path / "s.json"
    with open(out, "wb") as f:
        p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--interval", "300", "--copy", "precopy",
                              "--heap-tracker", "page", "--metadata", "rewrite", "--", *prog], cwd=tmp_path,
                             stdout=f, stderr=subprocess.PIPE, start_new_session=True)
        kill_at_epoch(p, pool, 2)
        p = subprocess.Popen([PROSPER, "resume", "--pool", pool, "--copy", "stop"], cwd=tmp_path, stdout=f,
                             stderr=subprocess.PIPE, start_new_session=True, text=True)
        epoch = json.loads(prosper("inspect", "--json", pool).stdout)["epoch"]
        kill_at_epoch(p, pool, epoch + 1)
        said = p.stderr.read()
        r = subprocess.run([PROSPER, "resume", "--pool", pool, "--stats-json", str(stats)], cwd=tmp_path,
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native
    # the killed resume's own line is held until its first commit like the rest of its stderr: the
    # kill can come between that commit and the line's release, and the next resume shows it then
    assert (said + r.stderr).count("every 300 ms") >= 2, (said, r.stderr)
    st = json.loads(stats.read_text())
    assert st["resumed"] and st["checkpoints"] >= 1
    assert (st["interval_ms"], st["copy"], st["stack_tracker"], st["heap_tracker"], st["metadata_mode"]) == \
        (300, "stop", "diff", "page", "rewrite"), st
    names = [g["name"] for g in json.loads(prosper("inspect", "--json", pool).stdout)["regions"]]
    assert "prosper.settings" in names


def _filling(pid):
    """Does the supervisor pid have its background fill threads (fillcopy.c names them)?"""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                if f.read().strip() == "prosper-fill":
                    return True
        except OSError:
            pass
    return False


def test_the_first_cut_after_a_lazy_resume_waits_for_the_fills_copiers(tmp_path, pool_dir):
    """A cut taken while the copiers still put the memory back would finish their work in its stop
    (half a second for a GiB): it waits for them instead, and the run then checkpoints as usual.
    The copiers are slowed by a test hook (each chunk waits 100 ms: the fill lasts about half a
    second) so that the wait is long even when a loaded machine starts the loop late.  The program
    runs about 2 s natively (pr 18 60 ran 1 s: killed at the 30th cut, it once finished while the
    slowed fill still ran, one checkpoint taken after the resume)."""
    prog = [os.path.join(BUILD, "bench", "pr"), "18", "150"]
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    pool = os.path.join(pool_dir, "wait.prosper")
    out, stats = tmp_path / "out", tmp_path / "s.json"
    with open(out, "wb") as f:
        p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", *prog], cwd=tmp_path, stdout=f,
                             stderr=subprocess.PIPE, start_new_session=True)
        kill_at_epoch(p, pool, 30)
        env = dict(os.environ, PROSPER_TEST_FILL_DELAY_US="100000")
        r = subprocess.run([PROSPER, "resume", "--pool", pool, "--verify", "--stats-json", str(stats)], cwd=tmp_path,
                           stdout=f, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native
    st = json.loads(stats.read_text())
    assert st["restore_lazy"] and st["checkpoints"] >= 2 and st["mismatches"] == 0, st
    assert st["cut_waited_for_fill_ms"] >= 20, st


def test_kills_during_a_resumes_background_fill(tmp_path, pool_dir):
    """A resume lets the program run before its memory is back (--restore lazy, the default) and
    fills it in the background.  Kills of the whole group while that fill runs (held open by a test
    hook) leave the pool resumable: the pool is only read until the first checkpoint after the
    fill.  A lazy resume then runs to a checkpoint of its own, and an eager one to the end."""
    import signal
    import time
    prog = [os.path.join(BUILD, "bench", "pr"), "18", "60"]
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    pool = os.path.join(pool_dir, "fill.prosper")
    out = tmp_path / "out"
    in_fill = 0
    with open(out, "wb") as f:
        p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", *prog], cwd=tmp_path, stdout=f,
                             stderr=subprocess.PIPE, start_new_session=True)
        kill_at_epoch(p, pool, 30)
        epoch = json.loads(prosper("inspect", "--json", pool).stdout)["epoch"]
        env = dict(os.environ, PROSPER_TEST_FILL_DELAY_US="150000")
        for attempt in range(4):
            p = subprocess.Popen([PROSPER, "resume", "--pool", pool], cwd=tmp_path, stdout=f,
                                 stderr=subprocess.PIPE, env=env, start_new_session=True)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and p.poll() is None and not _filling(p.pid):
                time.sleep(0.001)
            time.sleep(0.02 * attempt)  # at the fill's start, and further into it
            filling = _filling(p.pid)
            assert p.poll() is None, p.stderr.read()
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            in_fill += filling
            time.sleep(0.05)
            # nothing was committed: the next resume starts from the same checkpoint
            assert json.loads(prosper("inspect", "--json", pool).stdout)["epoch"] == epoch
        p = subprocess.Popen([PROSPER, "resume", "--pool", pool], cwd=tmp_path, stdout=f,
                             stderr=subprocess.PIPE, start_new_session=True)
        kill_at_epoch(p, pool, epoch + 5)
        stats = tmp_path / "s.json"
        r = subprocess.run([PROSPER, "resume", "--pool", pool, "--restore", "eager", "--verify",
                            "--stats-json", str(stats)], cwd=tmp_path, stdout=f, stderr=subprocess.PIPE,
                           text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert in_fill >= 3, f"only {in_fill} of 4 kills found the fill running"
    assert out.read_bytes() == native
    st = json.loads(stats.read_text())
    assert not st["restore_lazy"] and st["restore_fill_faults"] == 0 and st["mismatches"] == 0


def _killed_then_verified(prog, epoch, cwd, pool_dir):
    """prog run until its pool has committed `epoch`, its group killed, then resumed (the default
    lazy fill) with the oracle on to its end: the output must be the native one and every
    checkpoint after the resume equal live memory.  The resume's statistics."""
    native = subprocess.run(prog, capture_output=True, check=True, cwd=cwd).stdout
    pool = os.path.join(pool_dir, "verified.prosper")
    out, stats = cwd / "out", cwd / "s.json"
    with open(out, "wb") as f:
        _run_until_epoch(pool, prog, epoch, cwd, f)
        r = subprocess.run([PROSPER, "resume", "--pool", pool, "--verify", "--stats-json", str(stats)],
                           cwd=cwd, stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native
    st = json.loads(stats.read_text())
    assert st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr
    return st


def test_a_lazy_resume_runs_before_its_memory_is_back(tmp_path, pool_dir):
    """The default resume: the program runs while its memory is filled (pages it touches first are
    answered at once), every checkpoint after it equals live memory, and the output is the
    native one."""
    st = _killed_then_verified([os.path.join(BUILD, "bench", "pr"), "18", "40"], 25, tmp_path, pool_dir)
    assert st["restore_lazy"] and st["restored_bytes"] > 16 << 20, st
    assert st["checkpoints"] >= 3, st


def test_mappings_a_resume_maps_as_one_stay_two_regions(tmp_path, pool_dir):
    """Two 32 MiB mappings side by side that the kernel keeps apart while the program runs (the
    lower one "nohugepage", like a thread's stack) become one mapping when a resume maps them
    anew.  The capture after it cuts the map where the saved regions start: both regions stay as
    they were, and the resumed run reads about what the program writes after it -- not the
    second mapping whole as new (32 MiB in its first stop; a resumed `sort` read its 1.4 GiB
    buffer so, in 8-10 s).  Every checkpoint after the resume equals live memory."""
    # 400 rounds 6 ms apart: at least 2.4 s, so that a loaded machine's slower checkpoints still
    # reach the kill's epoch before the program ends (2 ms apart it once ended first)
    prog = [os.path.join(BUILD, "tests", "supervisor", "sidebyside"), "400", "6"]
    st = _killed_then_verified(prog, 10, tmp_path, pool_dir)
    assert st["resumed"] and st["restore_lazy"] and st["checkpoints"] >= 3, st
    # What the stops may read after the resume: the pages the rounds write, at most 400 x 8 of
    # them (12.5 MiB, when the kill lands early on a busy machine); followed as one mapping, the
    # second half would be read whole besides (32 MiB)
    assert st["stop_read_bytes"] < 20 << 20, st
    regions = json.loads(prosper("inspect", "--json", os.path.join(pool_dir, "verified.prosper")).stdout)["regions"]
    halves = [r for r in regions if r["kind"] == "anon" and r["length"] == 32 << 20]
    assert len(halves) == 2, [(r["name"], r["kind"], r["length"]) for r in regions]


def test_a_script_with_children_resumes_lazily(tmp_path, pool_dir):
    """A `#!/usr/bin/env python3` script with `sh -c "seq | awk"` children, its group killed: each
    process of the resumed tree is filled while it runs, the checkpoints after it equal live
    memory, and the output is the native one."""
    job = programs.script(tmp_path / "job.py", """#!/usr/bin/env python3
import hashlib, subprocess
h, data = hashlib.sha256(), bytearray(16 << 20)
for r in range(40):
    for i in range(0, len(data), 4096):
        data[i] = (data[i] + r * 7 + i) & 0xff
    h.update(bytes(data[:65536]))
    out = subprocess.run(["sh", "-c", f"seq 1 {2000 + r} | awk '{{s+=$1}} END {{print s}}'"],
                         capture_output=True, text=True).stdout.strip()
    print(r, out, h.hexdigest()[:16], flush=True)
""")
    st = _killed_then_verified(["env", "LC_ALL=C", job], 40, tmp_path, pool_dir)
    assert st["restore_lazy"] and st["tree_checkpoints"] >= 1 and st["execs_followed"] >= 1, st


def test_a_resumed_programs_checkpoints_equal_its_memory(tmp_path, pool_dir):
    """The oracle after a resume: the new thread id the restore writes into glibc's TCB of every
    thread must reach the next checkpoint like any other write (it once stayed the old id in the
    pool, one byte different from live memory, until that page was written again)."""
    # an interpreter: its main thread's TCB page is rarely written otherwise
    prog = ["/usr/bin/python3", "-S", "-c", "t = 0\nfor i in range(3000000):\n    t = (t * 31 + i) % 1000003\n"
            "    if i % 300000 == 0: print(i, t, flush=True)\nprint(t)"]
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    pool = os.path.join(pool_dir, "tc.prosper")
    out = tmp_path / "out"
    with open(out, "wb") as f:
        _run_until_epoch(pool, prog, 4, tmp_path, f)
        r = subprocess.run([PROSPER, "resume", "--pool", pool, "--verify", "--stats-json", str(tmp_path / "s.json")],
                           cwd=tmp_path, stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native
    st = json.loads((tmp_path / "s.json").read_text())
    assert st["checkpoints"] >= 3 and st["verified_bytes"] > 0 and st["mismatches"] == 0, r.stderr


def test_exit_code_and_default_pool_name(tmp_path):
    r = prosper("run", "--", "/bin/sh", "-c", "echo hi; exit 7", cwd=tmp_path)
    assert r.returncode == 7 and r.stdout == "hi\n"
    assert (tmp_path / "sh.prosper").exists()
    # a finished pool holds nothing to lose: the same command runs again
    assert prosper("run", "--", "/bin/sh", "-c", "exit 0", cwd=tmp_path).returncode == 0


def test_torture_reads_a_finished_pools_exit_code(tmp_path, pool_dir):
    """A torture kill can land after the program exited and its code was committed, while the
    supervisor closes the pool; the resume that follows is refused, and torture must take the
    recorded code as the run's, not report a difference.  Checked on what the supervisor says."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from prosper.cmd_torture import outcome
    pool = os.path.join(pool_dir, "spin.prosper")
    spin = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 5"   # a few checkpoints long
    assert prosper("run", "--pool", pool, "--", "/bin/sh", "-c", spin, cwd=tmp_path).returncode == 5
    assert json.loads(prosper("inspect", "--json", pool).stdout)["epoch"] >= 2
    again = prosper("resume", "--json", "--pool", pool, cwd=tmp_path)
    assert outcome(again.returncode, again.stderr) == ("finished", 5)
    # read from the code, not the wording: the human line alone says nothing to torture
    assert outcome(again.returncode, again.stderr.splitlines()[0]) == ("exit", 2)
    empty = os.path.join(pool_dir, "empty.prosper")
    assert prosper("run", "--pool", empty, "--", "/bin/true", cwd=tmp_path).returncode == 0
    never = prosper("resume", "--json", "--pool", empty, cwd=tmp_path)
    assert outcome(never.returncode, never.stderr) == ("fresh", None)


# Counters written through a shared mapping of a file and flushed now and then, as a JVM writes its
# hsperfdata file; the output depends only on the computation.
COUNTERS = """
import mmap, sys
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 65536, flags=mmap.MAP_SHARED)
t = 0
for i in range(3000000):
    m[i % 65536] = i & 0xff
    t = (t * 31 + i) % 1000003
    if i % 50000 == 0:
        m.flush()  # written back: the next write through the mapping stamps the file's mtime
    if i % 300000 == 0:
        print(i, t, flush=True)
print(t)
"""


def _counters(tmp_path):
    (tmp_path / "counters").write_bytes(bytes(65536))
    (tmp_path / "counters.py").write_text(COUNTERS)
    return ["/usr/bin/python3", "-S", str(tmp_path / "counters.py"), str(tmp_path / "counters")]


def _pool_pages(path):
    """The 4 KiB pages of a sparse file that hold something other than zeros, by offset: a pool
    file is as large as its capacity (GiB), of which a small program's checkpoints write a few MiB.
    (A hole and a page of zeros read alike: opening a pool may allocate one.)"""
    pages, fd = {}, os.open(path, os.O_RDONLY)
    try:
        at, end = 0, os.fstat(fd).st_size
        while at < end:
            try:
                at = os.lseek(fd, at, os.SEEK_DATA)
            except OSError:
                break  # no data past at
            stop = os.lseek(fd, at, os.SEEK_HOLE)
            for off in range(at - at % 4096, stop, 4096):
                page = os.pread(fd, 4096, off)
                if page.rstrip(b"\0"):
                    pages[off] = page
            at = stop
    finally:
        os.close(fd)
    return pages


def test_a_file_mapped_shared_and_writable_comes_back_as_it_was(tmp_path, pool_dir):
    """A file the program writes through a shared mapping changes after every checkpoint: no call
    shows those stores, so each cut keeps the file whole in the file-undo journal, and a resume
    puts it back as it was at the checkpoint before mapping it again (not refused as a changed
    executable or library would be; docs/run-resume.md, "Files")."""
    prog = _counters(tmp_path)
    native = subprocess.run(prog, capture_output=True, check=True).stdout
    pool = os.path.join(pool_dir, "counters.prosper")
    out = tmp_path / "out"
    with open(out, "wb") as f:
        p = _run_until_epoch(pool, prog, 20, tmp_path, f)
        err = p.stderr.read()
        assert b"is not persisted" not in err, err
        r = subprocess.run([PROSPER, "resume", "--pool", pool, "--stats-json", tmp_path / "st.json"], cwd=tmp_path,
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native
    assert json.loads((tmp_path / "st.json").read_text())["files_undone"] >= 1


def test_resume_refuses_a_shared_mapped_file_cut_shorter(tmp_path, pool_dir):
    """...but one another process cut shorter after the checkpoint is refused (file-changed-outside,
    naming it), the pool and the file left as they were."""
    prog = _counters(tmp_path)
    pool = os.path.join(pool_dir, "counters.prosper")
    with open(tmp_path / "out", "wb") as f:
        _run_until_epoch(pool, prog, 5, tmp_path, f)
    os.truncate(tmp_path / "counters", 4096)
    before = _pool_pages(pool)
    _refused(["resume", "--pool", pool], "file-changed-outside", str(tmp_path / "counters"), cwd=tmp_path)
    assert _pool_pages(pool) == before
    assert os.path.getsize(tmp_path / "counters") == 4096


@pytest.fixture
def killed_pool(tmp_path, pool_dir):
    """A copy of a bench program killed after a few checkpoints: (program path, pool)."""
    prog = tmp_path / "kv"
    shutil.copy2(os.path.join(BUILD, "bench", "kv"), prog)
    pool = os.path.join(pool_dir, "kv.prosper")
    with open(tmp_path / "out", "wb") as f:
        _run_until_epoch(pool, [str(prog)], 3, tmp_path, f)
    return prog, pool


def _refused(args, code, *words, cwd):
    """`prosper ARGS` is refused: exit 2, one line naming the words; with --json, the same refusal
    is also one JSON line on stderr carrying its stable code (src/supervisor/base/refusal.h)."""
    r = prosper(*args, cwd=cwd)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    j = prosper(args[0], "--json", *args[1:], cwd=cwd)
    assert j.returncode == 2 and j.stdout == "", (j.returncode, j.stderr)
    human, line = j.stderr.splitlines()
    assert human == r.stderr.rstrip("\n")
    obj = json.loads(line)
    assert obj["refused"] == code and obj["message"] in human, obj
    return obj


def test_resume_refuses_a_changed_executable(killed_pool, tmp_path):
    prog, pool = killed_pool
    before = _pool_pages(pool)
    with open(prog, "ab") as f:
        f.write(b"\0")
    _refused(["resume", "--pool", pool], "file-changed", "changed", cwd=tmp_path)
    assert _pool_pages(pool) == before   # a refusal changes nothing


def test_resume_refuses_a_corrupt_pool(killed_pool, tmp_path):
    _, pool = killed_pool
    with open(pool, "r+b") as f:
        f.seek(64)
        f.write(os.urandom(256))
    _refused(["resume", "--pool", pool], "pool-corrupt", cwd=tmp_path)


def test_run_refuses_to_overwrite_a_checkpoint(killed_pool, tmp_path):
    prog, pool = killed_pool
    before = _pool_pages(pool)
    _refused(["run", "--pool", pool, "--", str(prog)], "has-checkpoint", "resume", "--fresh", cwd=tmp_path)
    assert _pool_pages(pool) == before


@pytest.mark.parametrize("args,code,words", [
    (["resume", "--pool", "/nonexistent/p.prosper"], "pool-missing", ["No such file"]),
    (["resume"], "no-pool", ["no *.prosper pool here"]),
    (["run"], "usage", ["no program"]),
    (["run", "--interval", "0", "--", "/bin/true"], "usage", ["interval"]),
    (["run", "--stack-tracker", "soft", "--", "/bin/true"], "usage", ["page, diff or full"]),
    (["run", "--stack-granularity", "12", "--", "/bin/true"], "usage", ["powers of two"]),
    (["resume", "--", "/bin/true"], "usage", ["takes no program"]),
])
def test_usage_errors(tmp_path, args, code, words):
    _refused(args, code, *words, cwd=tmp_path)


def test_a_refusal_naming_quotes_and_backslashes_is_valid_json(tmp_path):
    """Messages carry paths, and paths may hold any byte: the JSON line escapes them."""
    pool = str(tmp_path / 'a "quoted" \\ name\tp.prosper')
    obj = _refused(["resume", "--pool", pool], "pool-missing", cwd=tmp_path)
    assert pool in obj["message"]


def test_every_refusal_code_is_documented():
    """The codes scripts branch on are listed in docs/run-resume.md; a new one must be added there."""
    table = open(os.path.join(ROOT, "src", "supervisor", "base", "refusal.c")).read()
    codes = re.findall(r'\[REFUSE_[A-Z_]+\] = "([a-z-]+)"', table)
    assert len(codes) >= 20, codes
    doc = open(os.path.join(ROOT, "docs", "run-resume.md")).read()
    missing = [c for c in codes if f"`{c}`" not in doc]
    assert not missing, missing


def test_a_file_that_is_not_a_pool(tmp_path):
    junk = tmp_path / "junk.prosper"
    junk.write_bytes(b"not a pool" * 100)
    _refused(["resume", "--pool", junk], "pool-corrupt", cwd=tmp_path)
    assert junk.read_bytes() == b"not a pool" * 100


def test_help_explains(tmp_path):
    for sub in ("run", "resume"):
        r = prosper(sub, "--help")
        assert r.returncode == 0 and "--stack-tracker" in r.stdout and "--pool" in r.stdout
    r = prosper("torture", "--help")
    assert r.returncode == 0 and "--kills" in r.stdout


def test_stdin_reaches_the_program():
    """bin/prosper once exec'd the supervisor inside the loop that read its subcommand table: the
    program's stdin was that table."""
    r = subprocess.run([PROSPER, "run", "--pool", "/dev/shm/prosper-stdin-test.prosper", "--", "/usr/bin/python3",
                        "-S", "-c", "print(int(input()) * 2)"], input=b"21\n", capture_output=True, timeout=60)
    if os.path.exists("/dev/shm/prosper-stdin-test.prosper"):
        os.unlink("/dev/shm/prosper-stdin-test.prosper")
    assert r.returncode == 0 and r.stdout == b"42\n", r.stderr
