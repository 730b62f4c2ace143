"""Output held until the checkpoint that covers it commits (docs/run-resume.md, "Output held until
its checkpoint commits"; src/supervisor/objects/outhold.h): what a reader outside the program sees
is exactly what the program wrote, once each and in order, however often it is killed."""
import json
import os
import pty
import random
import select
import signal
import socket
import subprocess
import sys
import time

from conftest import PROSPER

LINES = 3_000_000  # long enough for 30 kills 0.05-0.35 s apart on a loaded machine

# numbered lines, one write each (dash's echo is a builtin): a stop per write would show
COUNTER = """#!/bin/sh
i=0
while [ $i -lt %d ]; do i=$((i+1)); echo $i; done
"""


def _counter(tmp_path, n=LINES):
    p = tmp_path / "counter.sh"
    p.write_text(COUNTER % n)
    p.chmod(0o755)
    return str(p)


def _start_into(cmd, out_path, cwd):
    """cmd with its stdout into a pipe read by `cat >> out_path`, a consumer outside cmd's process
    group (the kill does not reach it)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
    with open(out_path, "ab") as out:
        c = subprocess.Popen(["cat"], stdin=p.stdout, stdout=out)
    p.stdout.close()
    return p, c


def test_a_pipe_reader_outside_sees_every_line_once_in_order_across_30_kills(tmp_path, pool_dir):
    prog = _counter(tmp_path)
    pool = os.path.join(pool_dir, "counter.prosper")
    out = tmp_path / "seen.txt"
    rng = random.Random(46)
    p, c = _start_into([PROSPER, "run", "--pool", pool, "--", prog], out, tmp_path)
    kills = 0
    for _ in range(30):
        time.sleep(rng.uniform(0.05, 0.35))
        if p.poll() is not None:
            break
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        c.wait(timeout=30)
        kills += 1
        p, c = _start_into([PROSPER, "resume", "--pool", pool], out, tmp_path)
    assert p.wait(timeout=300) == 0
    c.wait(timeout=30)
    seen = out.read_bytes().split(b"\n")
    assert seen[-1] == b""
    seen = [int(x) for x in seen[:-1]]
    assert kills >= 25, f"only {kills} kills landed before the program ended: make it longer"
    dup = len(seen) - len(set(seen))
    assert seen == list(range(1, LINES + 1)), (
        f"{len(seen)} lines, {dup} repeated, first wrong at index "
        f"{next((i for i, (a, b) in enumerate(zip(seen, range(1, LINES + 1))) if a != b), min(len(seen), LINES))}")


def test_a_pipe_output_is_held_without_a_stop_per_write_and_off_lets_it_through(tmp_path, pool_dir):
    prog = _counter(tmp_path, 20000)
    for mode, held in (("on", True), ("off", False)):
        stats = tmp_path / f"stats-{mode}.json"
        r = subprocess.run([PROSPER, "run", "--external-sync", mode, "--fresh", "--stats-json", stats, "--pool",
                            os.path.join(pool_dir, f"{mode}.prosper"), "--", prog], capture_output=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == b"".join(b"%d\n" % i for i in range(1, 20001))
        s = json.loads(stats.read_text())
        assert s["output_held"] is held
        # pipes of ours are put before stdout and stderr: their writes cost no stop, and every byte
        # is counted (stderr's are our own message)
        assert s["output_held_writes"] == 0
        assert s["output_held_bytes"] == (len(r.stdout) + len(r.stderr) if held else 0)
        assert s["file_calls_seen"] < 100, s["file_calls_seen"]


def test_a_reader_that_goes_away_ends_the_writer_as_without_prosper(tmp_path, pool_dir):
    # `yes | head -1`: yes must get EPIPE/SIGPIPE once head is gone, not write forever into us
    r = subprocess.run(f"{PROSPER} run --fresh --pool {pool_dir}/yes.prosper -- yes | head -1", shell=True,
                       capture_output=True, timeout=60, cwd=tmp_path)
    assert r.stdout == b"y\n"


def test_external_sync_takes_on_or_off_only(tmp_path):
    r = subprocess.run([PROSPER, "run", "--external-sync", "maybe", "--", "true"], capture_output=True, text=True)
    assert r.returncode == 2 and "--external-sync is on or off" in r.stderr


# -------------------------------------------------------------------- a terminal

INTERACTIVE = """#!/usr/bin/env python3
import os, sys
n = 0
sys.stdout.write("isatty %s\\n" % os.isatty(1)); sys.stdout.flush()
while True:
    n += 1
    sys.stdout.write("prompt %d> " % n); sys.stdout.flush()
    line = sys.stdin.readline()
    if not line or line.strip() == "quit":
        break
    sys.stdout.write("answer %d: %s\\n" % (n, line.strip().upper())); sys.stdout.flush()
"""


class Screen:
    """A pseudo-terminal the test reads like a person watching it (as `script` records one)."""

    def __init__(self):
        self.master, self.slave = pty.openpty()
        self.text = b""

    def read_until(self, needle, timeout=30):
        deadline = time.monotonic() + timeout
        while needle not in self.text and time.monotonic() < deadline:
            r, _, _ = select.select([self.master], [], [], 0.1)
            if r:
                try:
                    self.text += os.read(self.master, 65536)
                except OSError:
                    break
        assert needle in self.text, f"{needle!r} never shown; the screen: {self.text[-400:]!r}"

    def type(self, s):
        os.write(self.master, s.encode())


def test_an_interactive_program_on_a_terminal_repeats_no_line_after_a_kill(tmp_path, pool_dir):
    prog = tmp_path / "ask.py"
    prog.write_text(INTERACTIVE)
    prog.chmod(0o755)
    pool = os.path.join(pool_dir, "ask.prosper")
    screen = Screen()

    def start(*cmd):
        return subprocess.Popen([PROSPER, *cmd], stdin=screen.slave, stdout=screen.slave, stderr=subprocess.DEVNULL,
                                cwd=tmp_path, start_new_session=True)

    # a long interval: output shown at once would be repeated by a kill in the interval after it
    p = start("run", "--interval", "400", "--pool", pool, "--", str(prog))
    screen.read_until(b"isatty True")
    for k in range(1, 4):
        screen.read_until(b"prompt %d> " % k)
        t0 = time.monotonic()
        screen.type(f"word{k}\n")
        screen.read_until(f"answer {k}: WORD{k}".encode())
        assert time.monotonic() - t0 < 5
    screen.read_until(b"prompt 4> ")
    os.killpg(p.pid, signal.SIGKILL)  # at once: what is shown must be what the checkpoint holds
    p.wait()
    p = start("resume", "--pool", pool)
    time.sleep(1.0)  # a prompt shown twice would be on the screen by now
    screen.type("after\n")
    screen.read_until(b"answer 4: AFTER")
    screen.read_until(b"prompt 5> ")
    screen.type("quit\n")
    assert p.wait(timeout=60) == 0
    text = screen.text.replace(b"\r\n", b"\n")
    for k in range(1, 6):
        assert text.count(b"prompt %d> " % k) == 1, text
    for k in range(1, 4):
        assert text.count(b"answer %d: WORD%d" % (k, k)) == 1, text
    assert text.count(b"answer 4: AFTER") == 1
    os.close(screen.master)
    os.close(screen.slave)


# -------------------------------------------------------------------- a connection to the outside

UNIX_COUNTER = """import os, socket, sys
path, count = sys.argv[1], 0
try:
    os.unlink(path)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX)  # a stream socket
srv.bind(path), srv.listen(8)
reply = os.open(path + ".reply", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)  # every other reply by sendfile
while True:
    conn, _ = srv.accept()
    try:  # a connection that breaks ends, the server goes on (a resume leaves it closed: EBADF)
        f = conn.makefile("rb")
        for line in f:
            count += 1
            if count % 2:
                conn.sendall(b"%d\\n" % count)
            else:
                text = b"%d\\n" % count
                os.pwrite(reply, text, 0)
                assert os.sendfile(conn.fileno(), reply, 0, len(text)) == len(text)
        f.close()
        conn.close()
    except OSError:
        pass
"""


def test_a_unix_socket_server_never_acknowledges_an_increment_a_kill_undoes(tmp_path, pool_dir):
    """A counter served on a unix socket to a client outside the program (its replies by send and
    by sendfile, in turn): every count the client was told survives each of 10 kills -- the
    resumed server's next count is above it."""
    prog = tmp_path / "counter.py"
    prog.write_text(UNIX_COUNTER)
    path = str(tmp_path / "counter.sock")
    pool = os.path.join(pool_dir, "ucount.prosper")
    rng = random.Random(4646)

    def start(*cmd):
        with open(tmp_path / "server.err", "ab") as err:
            return subprocess.Popen([PROSPER, *cmd], stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path,
                                    start_new_session=True)

    def connect():
        deadline = time.monotonic() + 60
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                return s, s.makefile("rb")
            except OSError:
                s.close()
                assert time.monotonic() < deadline, "nothing listens on " + path
                time.sleep(0.02)

    p = start("run", "--pool", pool, "--", sys.executable, str(prog), path)
    told, kills, jumps = 0, 0, []
    s, f = connect()
    while kills < 10:
        kill_after = time.monotonic() + rng.uniform(0.1, 0.4)
        sendfile_reply = kills % 2  # the kill follows a reply sent by sendfile every other time
        while True:
            s.sendall(b"inc\n")
            n = int(f.readline())
            assert n == told + 1, f"told {told}, then {n}"
            told = n
            if time.monotonic() >= kill_after and n % 2 == (0 if sendfile_reply else 1):
                break
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        kills += 1
        s.close()
        p = start("resume", "--pool", pool)
        for attempt in range(100):  # connecting at once may reach the dying server's listener: reset
            s, f = connect()
            try:
                s.sendall(b"inc\n")
                n = int(f.readline())
                break
            except (ConnectionResetError, BrokenPipeError, ValueError):  # ValueError: b"" at its end
                s.close()
                time.sleep(0.02)
        jumps.append(n - told)
        assert n > told, (f"kill {kills}: the client was told {told}; the resumed server says {n}\n" +
                          (tmp_path / "server.err").read_text()[-3000:])
        told = n
    assert told > 50, "the client was hardly served"
    s.close()
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


# -------------------------------------------------------------------- crash points

HELLO = """#!/bin/sh
echo "before the kill"
sleep 1
echo "after the resume"
"""


def _hello(tmp_path):
    p = tmp_path / "hello.sh"
    p.write_text(HELLO)
    p.chmod(0o755)
    return str(p)


def test_output_a_commit_covered_but_the_kill_kept_from_view_is_shown_first_by_the_resume(tmp_path, pool_dir):
    """Killed just after the commit that covers the first line, before any of it is shown (test
    hook PROSPER_TEST_DIE_HOLDING): the reader saw nothing; the resume shows it first, once."""
    pool = os.path.join(pool_dir, "hello.prosper")
    out = tmp_path / "seen.txt"
    env = dict(os.environ, PROSPER_TEST_DIE_HOLDING="1")
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", _hello(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd=tmp_path, env=env, start_new_session=True)
    seen_at_kill = p.stdout.read()
    assert p.wait() == -signal.SIGKILL
    assert seen_at_kill == b""
    held = [f for f in os.listdir(pool + ".undo") if f.endswith(".out")]
    assert held, "the cut's held output is not beside the journal"
    r = subprocess.run(f"{PROSPER} resume --pool {pool} | cat >> {out}", shell=True, capture_output=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == b"before the kill\nafter the resume\n"
    assert not os.path.exists(pool + ".undo"), "a finished run leaves its held output behind"


def test_output_held_that_cannot_be_read_is_said_and_the_resume_goes_on(tmp_path, pool_dir):
    """The held output's file damaged (as a power cut that lost it would leave it): the resume says
    so on stderr, shows nothing of it and runs the program on."""
    pool = os.path.join(pool_dir, "hello.prosper")
    env = dict(os.environ, PROSPER_TEST_DIE_HOLDING="1")
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", _hello(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd=tmp_path, env=env, start_new_session=True)
    p.stdout.read()
    p.wait()
    for f in os.listdir(pool + ".undo"):
        if f.endswith(".out"):
            os.truncate(os.path.join(pool + ".undo", f), 10)
    r = subprocess.run(f"{PROSPER} resume --pool {pool} | cat", shell=True, capture_output=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"after the resume\n"
    assert b"the output held at the checkpoint" in r.stderr and b"cannot be read" in r.stderr
