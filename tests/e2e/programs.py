"""Programs written and started the way people do, in one place for the e2e tests that torture
them (test_exec_children.py, test_run_resume.py, test_ordinary_user.py) and for
bench/scripts/programs_as_started.py, which keeps their numbers (as_started: the list of both).
Each function writes its files into directory d (a str or a path) and returns the command line;
pyenv_shim also returns the PATH that finds the shim."""
import os

# about a second of interpreter work with progress on stdout
PRIMES = """
import os, sys
n = 0
for i in range(2, 330000):
    if all(i % p for p in range(2, int(i ** 0.5) + 1)):
        n += 1
    if i % 30000 == 0:
        print(i, n, os.environ.get("VAR"), flush=True)
print(n, sys.argv[1:])
"""


def script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return str(path)


def env_python_script(d):
    """A `#!/usr/bin/env python3` script."""
    return [script(f"{d}/primes.py", "#!/usr/bin/env python3\n" + PRIMES), "a", "b"]


def env_sh_script(d):
    """A `#!/usr/bin/env sh` script doing its own work (dash: `[` and $((...)) are built in, so
    the shell itself is the program)."""
    return [script(f"{d}/count.sh", """#!/usr/bin/env sh
i=0; s=0
while [ $i -lt 150000 ]; do
  i=$((i + 1)); s=$(( (s * 31 + i) % 1000003 ))
  [ $((i % 15000)) -eq 0 ] && echo "$i $s"
done
echo done $s
""")]


def env_with_variable(d):
    return ["/usr/bin/env", "VAR=x", "python3", "-S", "-c", PRIMES]


def env_dash_i(d):
    """`env -i` passes no environment at all."""
    return ["/usr/bin/env", "-i", "/usr/bin/python3", "-S", "-c", PRIMES]


def pyenv_shim(d, path):
    """A pyenv-style shim: a bash script that computes the interpreter in a subshell ($(...) forks
    a child) and then execs it; reached through `#!/usr/bin/env python3` on PATH.  Returns
    (argv, PATH with the shims first)."""
    os.makedirs(f"{d}/shims", exist_ok=True)
    script(f"{d}/shims/python3", """#!/usr/bin/env bash
set -e
real="$(PATH=/usr/bin:/bin command -v python3)"
export SHIMMED=1
exec "$real" "$@"
""")
    return env_python_script(d)[:1], f"{d}/shims:{path}"


def launcher(d):
    """A launcher script that sets a variable and execs `env` that execs the interpreter."""
    return [script(f"{d}/launch.sh", f"""#!/bin/sh
export VAR=from-launcher
exec /usr/bin/env VAR2=y python3 -S -c '{PRIMES}' "$@"
"""), "x"]


def phases(d):
    """subprocess.run (pipes to a shell that sleeps, then prints) and os.system between phases of
    work.  binascii, not hashlib: Debian's Python builds it in, while hashlib dlopens libcrypto."""
    return [script(f"{d}/phases.py", """#!/usr/bin/env python3
import binascii, os, subprocess
h, total = 0, 0
for phase in range(8):
    for i in range(150000):
        total = (total * 31 + i * phase) % 1000000007
    out = subprocess.run(["/bin/sh", "-c", f"sleep 0.03; echo phase {phase} {total}"],
                         capture_output=True, text=True).stdout
    h = binascii.crc32(out.encode(), h)
    print(out.strip(), flush=True)
    os.system("true")
print(h)
""")]


def text_files(d, n, size):
    """n files of `size` bytes of words (deterministic), d/in0.txt ..."""
    words = [b"prosper", b"stack", b"epoch", b"commit", b"pool", b"resume", b"kill"]
    x = 7
    for k in range(n):
        out = bytearray()
        while len(out) < size:
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
            out += words[x % len(words)] + b" "
        with open(f"{d}/in{k}.txt", "wb") as f:
            f.write(bytes(out))


def compress_loop(d):
    """A shell loop running gzip on five 3 MiB files: the work is done by the children."""
    os.makedirs(f"{d}/data", exist_ok=True)
    text_files(f"{d}/data", 5, 3 << 20)
    return [script(f"{d}/compress.sh", f"""#!/bin/sh
for f in {d}/data/in*.txt; do
  gzip -6 -c "$f" > "$(basename "$f").gz"
  echo "$(basename "$f") done"
done
""")]


def exec_loop(d):
    """A shell loop that runs a short program on every round (dash starts it with vfork): most
    of the time one of its processes is between a vfork and an exec, or in a loader."""
    return [script(f"{d}/exec_loop.sh", """#!/bin/sh
i=0
while [ $i -lt 700 ]; do
  i=$((i + 1))
  expr $i \\* 7919 % 10007
done
""")]


def pipeline(d):
    """Three times: the shell counts on its own, then a generator | a filter | a compressor into
    a file."""
    return [script(f"{d}/pipeline.sh", """#!/bin/sh
for n in 1 2 3; do
  i=0; while [ $i -lt 30000 ]; do i=$((i + 1)); done
  python3 -S -c "
for i in range(60000):
    print(i * $n, (i * 7919) % 10007)" | tr 0-9 a-j | gzip -6 > part$n.gz
  echo "part $n: $(wc -c < part$n.gz) bytes"
done
""")]


def selfpipe(d):
    """A self-pipe: both ends kept, O_NONBLOCK on the read end."""
    return ["/usr/bin/python3", "-S", script(f"{d}/selfpipe.py", """import os
r, w = os.pipe()
os.set_blocking(r, False)
t = 0
for i in range(3000000):
    t = (t * 31 + i) % 1000003
    if i % 250000 == 0:
        os.write(w, b"%d\\n" % t)
        print(os.read(r, 100).decode().strip(), flush=True)
print(t, r, w, os.get_blocking(r), os.get_blocking(w))
""")]


def timers(d):
    """A periodic ITIMER_REAL waited on with pause(), then an alarm()."""
    return ["/usr/bin/python3", script(f"{d}/timers.py", """import signal
ticks = 0
def tick(sig, frame):
    global ticks
    ticks += 1
signal.signal(signal.SIGALRM, tick)
signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
while ticks < 30:
    signal.pause()
signal.setitimer(signal.ITIMER_REAL, 0)
print("ticks", min(ticks, 30), flush=True)
signal.alarm(1)
signal.pause()
print("alarm", flush=True)
""")]


def limits(d):
    """Lowers its open-file limit (and its core size), then hits the limit phase after phase."""
    return ["/usr/bin/python3", "-S", script(f"{d}/limits.py", """import resource
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
t = 0
for phase in range(8):
    for i in range(500000):
        t = (t * 31 + i) % 1000003
    files, err = [], None
    try:
        while len(files) < 100:
            files.append(open("/dev/null"))
    except OSError as e:
        err = e.errno
    print(phase, t, len(files), err, resource.getrlimit(resource.RLIMIT_NOFILE)[0],
          resource.getrlimit(resource.RLIMIT_CORE), flush=True)
    for f in files:
        f.close()
""")]


def slow_pipeline(d):
    """A generator | a filter | a compressor into a file, the generator slow enough that kills land
    while all three run and bytes sit in both pipes."""
    return [script(f"{d}/slowpipe.sh", """#!/bin/sh
python3 -S -c '
import sys, time
for i in range(3000):
    sys.stdout.write("%d %d\\n" % (i, i * i % 1000003))
    if i % 100 == 0:
        sys.stdout.flush(); time.sleep(0.05)
' | awk '{ s += $2; print $1, s }' | gzip -6 > sums.gz
echo "sums: $(zcat sums.gz | tail -1)"
""")]


def pipe_in_flight(d):
    """A parent writes into a pipe faster than its forked child reads it: at most cuts the pipe
    holds tens of KiB, which must reach the child exactly once, in order."""
    return ["/usr/bin/python3", "-S", script(f"{d}/inflight.py", """import os, time, zlib
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    crc, n = 0, 0
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        crc, n = zlib.crc32(b, crc), n + len(b)
        time.sleep(0.002)
    print("child read", n, "bytes, crc", crc, flush=True)
    os._exit(0)
os.close(r)
crc = 0
for k in range(1600):
    b = bytes((k * 7 + j) % 251 for j in range(1000))
    crc = zlib.crc32(b, crc)
    os.write(w, b)
os.close(w)
_, st = os.waitpid(pid, 0)
print("parent wrote 1600000 bytes, crc", crc, "child status", st)
""")]


def kill_and_wait(d):
    """A parent forks three workers, works, then kills each by the pid fork returned and waits for
    it by that pid.  Each worker tells the parent its own pid through a pipe when it starts and
    checks it again when it is stopped; the parent compares it with the pid it holds.  (Only the
    parent prints: the workers' order would differ from run to run.  The pids travel through a
    pipe, not files: a file the killed run removed at its end would be missing for a resume from
    a cut before that -- files are the file system's, not the checkpoint's.)"""
    return ["/usr/bin/python3", "-S", script(f"{d}/killwait.py", """import os, signal, time
r, w = os.pipe()
kids = []
for k in range(3):
    pid = os.fork()
    if pid == 0:
        me = os.getpid()
        os.write(w, b"%d %d\\n" % (k, me))
        done = []
        signal.signal(signal.SIGTERM, lambda s, f: done.append(1))
        t = 0
        while not done:
            for i in range(20000):
                t = (t * 31 + i) % 1000003
            time.sleep(0.001)
        with open("worker%d.end" % k, "w") as f:
            f.write("same pid after: %s\\n" % (os.getpid() == me))
        os._exit(10 + k)
    kids.append(pid)
told, buf = {}, b""
while len(told) < 3:
    buf += os.read(r, 64)
    *lines, buf = buf.split(b"\\n")
    for line in lines:
        k, p = map(int, line.split())
        told[k] = p
t = 0
for i in range(4000000):  # about 1 s: a kill has time to land (30 planned, a third must)
    t = (t * 17 + i) % 1000003
for k, pid in enumerate(kids):
    os.kill(pid, signal.SIGTERM)
    _, st = os.waitpid(pid, 0)
    print("worker", k, "pid as forked:", told[k] == pid, "exit", os.waitstatus_to_exitcode(st), flush=True)
print("parent", t)
""")]


def unix_server(d):
    """A parent listens on a unix socket by a relative name and serves three workers, one after
    the other: each forked worker connects, and it and the parent talk both ways; the parent
    accepts again for the next one -- also after a resume.  Kills land before a connect, while a
    connection waits to be accepted, and during the talk."""
    return ["/usr/bin/python3", "-S", script(f"{d}/unixserver.py", """import os, socket, zlib
path = "srv.sock"
if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(2)
total = 0
for w in range(3):
    pid = os.fork()
    if pid == 0:
        srv.close()
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(path)
        state, got = w + 1, b""
        for k in range(900):
            for i in range(3000):
                state = (state * 31 + i) % 1000003
            c.sendall(b"%d %d\\n" % (w, state))
            while b"\\n" not in got:
                got += c.recv(4096)
            line, got = got.split(b"\\n", 1)
            state = (state + int(line)) % 1000003
        c.close()
        os._exit(state % 100)
    conn, _ = srv.accept()
    served = 0
    for line in conn.makefile("rb"):  # until the worker closes its end
        total = (total * 7 + int(line.split()[1])) % 1000000007
        conn.sendall(b"%d\\n" % (zlib.crc32(line.rstrip()) % 1000))
        served += 1
    conn.close()
    _, st = os.waitpid(pid, 0)
    print("worker", w, "served", served, "exit", os.waitstatus_to_exitcode(st), flush=True)
print("total", total)
os.unlink(path)
""")]


_GROUPS = """import os, signal, time
def work(n, seed):
    t = seed
    for i in range(n):
        t = (t * 31 + i) % 1000003
    return t
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(1))
def wait_for_signal():  # at most 30 s: a child of a parent that failed does not linger
    for _ in range(30000):
        if got:
            return
        time.sleep(0.001)
@LED_PIPE@a = os.fork()
if a == 0:
@LED_CHILD@    os.setpgrp()
@LED_SAY@    work(5000000, 1)
    wait_for_signal()
    os._exit(1 + 2 * (os.getpgrp() == os.getpid()))
def setpgid(pid, pgid):  # as a shell does in the parent: the child may have executed already
    try:
        os.setpgid(pid, pgid)
    except PermissionError:
        pass
@LED_WAIT@setpgid(a, a)
c = os.fork()
if c == 0:
    os.setsid()
    t = work(5000000, 2)
    os._exit(4 + 8 * (os.getsid(0) == os.getpid()) + 16 * (os.getpgrp() == os.getpid()))
r, w = os.pipe()
m = os.fork()
if m == 0:
    os.close(w)
    os.setpgid(0, a)
    os.read(r, 1)
    work(5000000, 3)
    wait_for_signal()
    os._exit(32 + 64 * (os.getpgrp() == a))
os.close(r)
setpgid(m, a)
os.write(w, b"x")
t = work(9000000, 4)
os.killpg(a, signal.SIGUSR1)
for k in (a, c, m):
    _, st = os.waitpid(k, 0)
    print("child exit", os.waitstatus_to_exitcode(st), flush=True)
print("parent", t)
"""


def _groups_script(leader_first):
    """The groups program; leader_first: the parent waits (a byte over a pipe) until its first
    child leads its own group before it forks the others."""
    pipe = leader_first
    return (_GROUPS.replace("@LED_PIPE@", "led_r, led_w = os.pipe()\n" if pipe else "")
            .replace("@LED_CHILD@", "    os.close(led_r)\n" if pipe else "")
            .replace("@LED_SAY@", "    os.write(led_w, b\"x\")\n    os.close(led_w)\n" if pipe else "")
            .replace("@LED_WAIT@", "os.close(led_w)\nos.read(led_r, 1)  # a leads its group now\nos.close(led_r)\n"
                     if pipe else ""))


def groups(d):
    """Process groups and sessions: a child leads its own group, another its own session, a third
    is moved into the first one's group (as a job-control shell puts a pipeline's members in one
    group: the child and the parent both call setpgid, and the parent's call may fail once the
    child has executed a program -- to the kernel a child made again by a resume has), and at the
    end the parent signals the whole group by its id.  Each child says in its exit code which of
    its checks held; only the parent prints."""
    return ["/usr/bin/python3", "-S", script(f"{d}/groups.py", _groups_script(False))]


def groups_leader_first(d):
    """groups(), but the parent waits (a byte over a pipe) until its first child leads its own
    group before it forks the others, as a shell that makes a job's group before its members:
    the member always joins a group that exists, and the parent's signal to the group by its id
    reaches two children whose SIGUSR1 handler was installed before any fork."""
    return ["/usr/bin/python3", "-S", script(f"{d}/groups_leader_first.py", _groups_script(True))]


def foreground_job(d):
    """What a job-control shell does: the parent puts its child in a group of its own and gives it
    the terminal; the child works, then reads a line from the terminal (from the background it
    would be stopped by SIGTTIN instead)."""
    return ["/usr/bin/python3", "-S", script(f"{d}/fgjob.py", """import os, signal, sys, time
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    while os.tcgetpgrp(0) != os.getpgrp():
        time.sleep(0.001)
    t = 0
    for i in range(6000000):
        t = (t * 31 + i) % 1000003
    print("child ready", flush=True)
    line = sys.stdin.readline()
    print("child got", line.strip(), t, flush=True)
    os._exit(0)
os.setpgid(pid, pid)
os.tcsetpgrp(0, pid)
_, st = os.waitpid(pid, 0)
print("parent done", os.waitstatus_to_exitcode(st), flush=True)
""")]


def message_pairs(d):
    """A datagram socketpair, then a seqpacket one, between a parent and its child: four messages
    in flight each way at a time, each read whole by one recv (a merged or split message would
    change the answer)."""
    return ["/usr/bin/python3", "-S", script(f"{d}/msgpairs.py", """import os, socket, zlib
for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    pid = os.fork()
    if pid == 0:
        a.close()
        state = 1
        while True:
            msg = b.recv(65536)
            if msg == b"end":
                break
            for i in range(3000):
                state = (state * 31 + len(msg) + i) % 1000003
            b.send(b"%d:%d" % (len(msg), zlib.crc32(msg) ^ state))
        os._exit(0)
    b.close()
    total = 0
    for k in range(600):
        a.send(b"m" * (k % 50) + b"%d" % k)
        if k % 4 == 3:
            for _ in range(4):
                n, c = a.recv(65536).split(b":")
                total = (total * 7 + int(n) * 1000 + int(c) % 1000) % 1000000007
    a.send(b"end")
    os.waitpid(pid, 0)
    print(kind.name, total, flush=True)
""")]


def socketpair_talk(d):
    """A parent and its forked child talk both ways over a socketpair: requests and answers in
    flight at the cuts, the child's answers depending on every request it read."""
    return ["/usr/bin/python3", "-S", script(f"{d}/sockpair.py", """import os, socket, zlib
a, b = socket.socketpair()
pid = os.fork()
if pid == 0:
    a.close()
    state, buf = 1, b""
    while True:
        chunk = b.recv(65536)
        if not chunk:
            break
        buf += chunk
        while b"\\n" in buf:
            line, buf = buf.split(b"\\n", 1)
            for i in range(2000):
                state = (state * 31 + len(line) + i) % 1000003
            b.sendall(b"%d %d\\n" % (zlib.crc32(line), state))
    os._exit(0)
b.close()
total, got = 0, b""
for k in range(600):
    a.sendall(b"request %d %s\\n" % (k, b"x" * (k % 97)))
    if k % 3 == 2:
        while got.count(b"\\n") < 3:
            got += a.recv(65536)
        for line in got.split(b"\\n")[:3]:
            total = (total * 7 + int(line.split()[1])) % 1000000007
        got = b"\\n".join(got.split(b"\\n")[3:])
a.shutdown(socket.SHUT_WR)
while True:
    chunk = a.recv(65536)
    if not chunk:
        break
    got += chunk
_, st = os.waitpid(pid, 0)
print("answers", total, "left", len(got), "child", st)
""")]


def multiprocessing_fork(d):
    """Python's multiprocessing with the fork start method: a Pool (its handler threads, its task
    and result pipes, its semaphores -- POSIX semaphores in deleted /dev/shm files), then three
    Processes adding to a shared Value under its lock (multiprocessing's heap: a deleted
    /dev/shm file mapped shared) and answering through a Queue; and a MAP_SHARED anonymous page
    a child writes and its parent reads."""
    return ["/usr/bin/python3", "-S", script(f"{d}/mpfork.py", """import mmap, multiprocessing as mp, os, struct
def work(k, n=300000):
    t = 0
    for i in range(n):
        t = (t * 31 + i * k) % 1000003
    return t
def add(k, total, q):
    for i in range(40):
        with total.get_lock():
            total.value += work(k + i, 20000) % 97
    q.put((k, total.value > 0))
if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(3) as pool:
        print("pool", pool.map(work, range(24), chunksize=1), flush=True)
    total, q = mp.Value("q", 0), mp.Queue()
    ps = [mp.Process(target=add, args=(k, total, q)) for k in range(3)]
    for p in ps:
        p.start()
    got = sorted(q.get() for _ in ps)
    for p in ps:
        p.join()
    print("value", total.value, got, [p.exitcode for p in ps], flush=True)
    page = mmap.mmap(-1, 4096)
    pid = os.fork()
    if pid == 0:
        for i in range(200):
            page[0:8] = struct.pack("q", work(i, 5000) + i)
        os._exit(0)
    os.waitpid(pid, 0)
    print("shared page", struct.unpack("q", page[0:8])[0])
""")]


def late_wait(d):
    """Children that end long before their parent waits for them: one exits with 7, one is killed
    by SIGTERM, one by SIGUSR1 that the parent handles (the child gets the default action); the
    parent works for a while, then collects each status by pid."""
    return ["/usr/bin/python3", "-S", script(f"{d}/latewait.py", """import os, signal
signal.signal(signal.SIGUSR1, lambda s, f: None)
kids = []
for how in ("exit", "term", "usr1"):
    pid = os.fork()
    if pid == 0:
        if how == "exit":
            os._exit(7)
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM if how == "term" else signal.SIGUSR1)
        os._exit(99)
    kids.append((how, pid))
t = 0
for i in range(5000000):
    t = (t * 31 + i) % 1000003
for how, pid in kids:
    got, st = os.waitpid(pid, 0)
    print(how, got == pid, os.WIFEXITED(st) and os.WEXITSTATUS(st), os.WIFSIGNALED(st) and os.WTERMSIG(st), flush=True)
print("parent", t)
""")]


def orphan(d):
    """A child forks a grandchild and exits at once: the grandchild, an orphan (the child of the
    namespace's init), works on and leaves its result in a file, which the first process waits
    for and prints."""
    return ["/usr/bin/python3", "-S", script(f"{d}/orphan.py", """import os, time
def work(n):
    t = 0
    for i in range(n):
        t = (t * 31 + i) % 1000003
    return t
pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        r = work(8000000)
        with open("result.tmp", "w") as f:
            f.write("orphan %d\\n" % r)
        os.rename("result.tmp", "result.txt")
        os._exit(0)
    os._exit(3)
_, st = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(st), flush=True)
while not os.path.exists("result.txt"):
    work(20000)
with open("result.txt") as f:
    print(f.read().strip())
print("first", work(1000000))
""")]


def socket_after_peer_exit(d):
    """A child sends its results over a socketpair and exits; its parent reads them much later,
    until end of file, and then finds that writing fails (EPIPE): the end whose peer is gone,
    with the bytes still queued at it, is in the cuts."""
    return ["/usr/bin/python3", "-S", script(f"{d}/halfclosed.py", """import errno, os, socket
a, b = socket.socketpair()
pid = os.fork()
if pid == 0:
    a.close()
    for k in range(50):
        b.sendall(b"result %d %d\\n" % (k, (k * 7919) % 10007))
    os._exit(0)
b.close()
os.waitpid(pid, 0)
t = 0
for i in range(4000000):
    t = (t * 31 + i) % 1000003
got = b""
while True:
    chunk = a.recv(100)
    if not chunk:
        break
    got += chunk
print("got", len(got), got.count(b"\\n"), t, flush=True)
try:
    a.send(b"x")
except OSError as e:
    print("send after the peer ended:", errno.errorcode[e.errno])
""")]


def fifo_pair(d):
    """A named pipe between a parent and its child, both opening it by name: the child writes
    results as it computes them, the parent reads them more slowly, so bytes wait in the FIFO at
    the cuts; at the end the parent removes it."""
    return ["/usr/bin/python3", "-S", script(f"{d}/fifo.py", """import os
if not os.path.exists("q.fifo"):
    os.mkfifo("q.fifo", 0o640)
pid = os.fork()
if pid == 0:
    w = os.open("q.fifo", os.O_WRONLY)
    t = 0
    for k in range(4000):
        for i in range(700):
            t = (t * 31 + i + k) % 1000003
        os.write(w, b"%d\\n" % t)
    os._exit(0)
r = os.open("q.fifo", os.O_RDONLY)
total, buf, s = 0, b"", 0
while True:
    c = os.read(r, 64)
    if not c:
        break
    buf += c
    for i in range(2000):
        s = (s * 7 + i) % 1000003
print(len(buf), buf.count(b"\\n"), sum(int(x) for x in buf.split()) % 1000003, flush=True)
os.waitpid(pid, 0)
os.unlink("q.fifo")
""")]


def as_started(d, path, build):
    """Every program above as bench/scripts/programs_as_started.py tortures it, with the ones of
    tests/supervisor: (name, argv, extra torture options, PATH)."""
    shim, shim_path = pyenv_shim(d, path)
    sup = f"{build}/tests/supervisor"
    return [
        ("#!/usr/bin/env python3 script", env_python_script(d), [], path),
        ("#!/usr/bin/env sh script", env_sh_script(d), [], path),
        ("env VAR=x python3", env_with_variable(d), [], path),
        ("env -i python3", env_dash_i(d), [], path),
        ("pyenv-style shim on PATH", shim, [], shim_path),
        ("launcher script that execs", launcher(d), [], path),
        ("python: subprocess.run + os.system", phases(d), [], path),
        ("sh loop over gzip (5 x 3 MiB)", compress_loop(d), [], path),
        ("sh loop that runs expr every round (700 vfork + exec)", exec_loop(d), [], path),
        ("3-stage pipeline x3 (python | tr | gzip)", pipeline(d), [], path),
        ("slow pipeline, bytes in flight (sh: python | awk | gzip)", slow_pipeline(d), [], path),
        ("python: parent and child over a full pipe", pipe_in_flight(d), [], path),
        ("python: parent kills and waits for its workers by pid", kill_and_wait(d), [], path),
        ("python: a server and its workers over a named unix socket", unix_server(d), [], path),
        ("python: a group leader, a session leader, a member moved into a group", groups(d), [], path),
        ("python: parent and child over a socketpair", socketpair_talk(d), [], path),
        ("python: datagram and seqpacket socketpairs, messages in flight", message_pairs(d), [], path),
        ("python: multiprocessing (fork): Pool, Value, Queue, shared page", multiprocessing_fork(d), [], path),
        ("python: children that end long before their parent waits", late_wait(d), [], path),
        ("python: an orphan (its parent exited) works on", orphan(d), [], path),
        ("python: a socket whose peer ended, read later", socket_after_peer_exit(d), [], path),
        ("python: a named pipe (FIFO) between parent and child", fifo_pair(d), [], path),
        ("python self-pipe", selfpipe(d), [], path),
        ("dlopen in a slow constructor", [f"{sup}/dlopener", f"{sup}/libslowinit.so", "8"], [], path),
        ("python: periodic setitimer + alarm, waited in pause()", timers(d), [], path),
        ("signals pending across checkpoints (pendsig 8)", [f"{sup}/pendsig", "8"], [], path),
        ("python: lowered RLIMIT_NOFILE hit each phase", limits(d), [], path),
        ("error-checking mutexes held (own ids)", [f"{sup}/lockowner", "6", "plain"], [], path),
        ("error-checking mutexes held (--host-pids)", [f"{sup}/lockowner", "6", "plain"],
         ["--host-pids", "--timeout", "60"], path),
    ]
