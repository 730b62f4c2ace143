"""Pseudo-terminals a program makes for itself (src/supervisor/objects/ptys.h, fd_pty.c): a parent
that reads what its child writes to a terminal -- mpirun and its ranks, `script`, `expect` -- goes
on across kills with every byte in flight, and a terminal that is not kept (a controlling
terminal) refuses the resume with a code instead of resuming the program on a stranger's
/dev/pts/N."""
import json
import os
import subprocess

from conftest import PROSPER, kill_at_epoch, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"

# The child writes a numbered line every 2 ms to its terminal (ONLCR on: "\n" reaches the master
# as "\r\n"); the parent reads only every 25 ms, so bytes wait at the master at most cuts, and
# writes what it read to a file, as read; it ends with the terminal's window size.
PTY_LOOP = r"""
import fcntl, os, struct, sys, termios, time
m, s = os.openpty()
fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 41, 123, 0, 0))
pid = os.fork()
if pid == 0:
    os.close(m)
    for i in range(1500):
        os.write(s, b"line %d %s\n" % (i, b"x" * (i % 61)))
        t = time.monotonic()
        while time.monotonic() - t < 0.002:
            pass
    os._exit(0)
os.close(s)
out = open("got", "ab", buffering=0)
while True:
    t = time.monotonic()
    while time.monotonic() - t < 0.025:
        pass
    try:
        b = os.read(m, 65536)
    except OSError:     # EIO: the child closed its end and every byte was read
        break
    if not b:
        break
    out.write(b)
os.waitpid(pid, 0)
rows, cols = struct.unpack("HHHH", fcntl.ioctl(m, termios.TIOCGWINSZ, b"\0" * 8))[:2]
print("window", rows, cols)
"""


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_a_terminal_between_parent_and_child_survives_kills(tmp_path):
    """Each resume makes a new terminal (another /dev/pts/N) with the window size and termios,
    and the bytes that waited at the master at the cut: the file of what the parent read is the
    native run's, byte for byte (no line lost, none twice, no "\r\r\n")."""
    kills = 20 if LONG else 8
    r = prosper("torture", "--kills", kills, "--seed", 3, "--json", "--", "/usr/bin/python3",
                _write(tmp_path / "ptyloop.py", PTY_LOOP), timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= kills // 2, res


# pty.fork(): the child is a session leader whose controlling terminal is the new slave.
CTTY = r"""
import os, pty, sys, time
pid, m = pty.fork()
if pid == 0:
    for i in range(100000):
        print(i, flush=True)
        time.sleep(0.005)
    os._exit(0)
with open("got", "ab", buffering=0) as out:
    while True:
        try:
            b = os.read(m, 4096)
        except OSError:
            break
        out.write(b)
"""


def test_a_controlling_terminal_refuses_the_resume_with_a_code(tmp_path, pool_dir):
    """A terminal that is a process's controlling terminal is not kept (its session would have to
    be given it back): `run` goes on checkpointing, and `resume` is refused with fd-unsupported,
    naming why, with nothing started and the program's files as they were."""
    pool = os.path.join(pool_dir, "ctty.prosper")
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", "/usr/bin/python3", _write(tmp_path / "c.py", CTTY)],
                         cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    kill_at_epoch(p, pool, 5)
    p.stderr.close()
    before = (tmp_path / "got").read_bytes()
    r = prosper("resume", "--json", "--pool", pool, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    refusal = json.loads([ln for ln in r.stderr.splitlines() if ln.startswith("{")][-1])
    assert refusal["refused"] == "fd-unsupported", refusal
    assert "controlling terminal" in refusal["message"], refusal
    assert before.startswith((tmp_path / "got").read_bytes())
