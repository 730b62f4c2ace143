"""A resumed program finds its files as they were at its checkpoint (docs/run-resume.md, "Files").

Real programs that change files between checkpoints -- the sqlite3 shell and Python's sqlite3 in a
database with a rollback journal, a program that saves by renaming a temporary file over the old
one, a log appender, a consumer that deletes its inputs -- are killed at random instants and
resumed; their output, exit code and every file they leave (the database byte for byte, and its
`PRAGMA integrity_check`) must be those of a native run.  What cannot be undone yet (a file
mapped shared and writable: SQLite's WAL index, an mmap'd rewrite) and a file changed by another
process after the checkpoint are refusals with their codes that touch nothing."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

import programs
from conftest import BUILD, PROSPER, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"
KILLS = 30


def torture(*prog, kills=KILLS, pool_dir=None, seed=1, extra=()):
    cmd = [PROSPER, "torture", "--kills", str(kills), "--seed", str(seed), "--timeout", "400", "--json", *extra]
    if pool_dir:
        cmd += ["--pool-dir", pool_dir]
    r = subprocess.run(cmd + ["--", *prog], capture_output=True, text=True, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], (res["differences"], res["workdir"], res["pool"])
    assert res["resumes"] >= kills // 2, res
    return res


SQL_SCRIPT = """PRAGMA journal_mode={mode};
CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER);
{body}
SELECT count(*), sum(v), group_concat(k, '') FROM t;
PRAGMA integrity_check;
"""


def sql_transactions(n):
    lines = []
    for i in range(n):
        lines.append(f"BEGIN; INSERT INTO t(k, v) VALUES ('{i % 7}', {i}); "
                     f"UPDATE t SET v = v + 1 WHERE id % 5 = {i % 5}; "
                     f"INSERT INTO t(k, v) SELECT k, v FROM t WHERE id = {i // 2 + 1}; COMMIT;")
    return "\n".join(lines)


# Saves by writing a temporary file and renaming it over the state, reading the state back each step.
SAVER = """#!/usr/bin/env python3
import os
with open("state", "w") as f:
    f.write("0\\n")
for i in range(400):
    with open("state") as f:
        n = int(f.read().split()[0])
    with open("state.tmp", "w") as f:
        f.write(f"{n + i}\\n" + "x" * (i % 50) + "\\n")
    os.replace("state.tmp", "state")
print(open("state").read().split()[0])
"""


def test_sqlite_shell_rollback_journal(tmp_path):
    """The sqlite3 shell runs 150 transactions (inserts and updates) from a script into a database
    in the working directory: each makes, writes and removes the rollback journal and rewrites
    pages of the database in place -- the case that left a malformed database before."""
    sql = programs.script(f"{tmp_path}/load.sql", SQL_SCRIPT.format(mode="delete", body=sql_transactions(150)))
    torture("/usr/bin/sqlite3", "data.db", f".read {sql}")


def test_python_sqlite_module(tmp_path):
    """Python's sqlite3 module: one connection, a commit per transaction, the result read back."""
    prog = programs.script(f"{tmp_path}/load.py", """#!/usr/bin/env python3
import sqlite3
db = sqlite3.connect("data.db")
db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER)")
for i in range(300):
    db.execute("INSERT INTO t(k, v) VALUES (?, ?)", (str(i % 7), i))
    db.execute("UPDATE t SET v = v + 1 WHERE id % 5 = ?", (i % 5,))
    db.commit()
print(db.execute("SELECT count(*), sum(v) FROM t").fetchone())
print(db.execute("PRAGMA integrity_check").fetchone()[0])
""")
    torture(prog)


def test_save_by_renaming_a_temporary_file(tmp_path):
    """Each step reads the state, writes the next one to a temporary file and renames it over the
    old: a rename after the checkpoint replaced a file the resumed program reads again."""
    prog = programs.script(f"{tmp_path}/saver.py", SAVER)
    torture(prog)


def test_log_appender_reads_its_own_log(tmp_path):
    """Opens the log for appending at every step and counts its lines first: a line written
    twice, or one lost, changes every number after it."""
    prog = programs.script(f"{tmp_path}/appender.py", """#!/usr/bin/env python3
for i in range(500):
    try:
        with open("log") as f:
            seen = sum(1 for _ in f)
    except FileNotFoundError:
        seen = 0
    with open("log", "a") as f:
        f.write(f"{i} {seen}\\n")
print(seen)
""")
    torture(prog)


def test_consumer_deletes_its_inputs(tmp_path):
    """Makes 300 input files, then consumes each: reads it, appends it to the output, removes it
    -- a removal after the checkpoint is of a file the resumed program reads again."""
    prog = programs.script(f"{tmp_path}/consumer.py", """#!/usr/bin/env python3
import os
os.mkdir("in")
for i in range(300):
    with open(f"in/{i:04}", "w") as f:
        f.write(f"item {i} " + "y" * (i % 40) + "\\n")
with open("out", "w") as out:
    for name in sorted(os.listdir("in")):
        with open(f"in/{name}") as f:
            out.write(f.read())
        out.flush()
        os.unlink(f"in/{name}")
os.rmdir("in")
print(os.path.getsize("out"))
""")
    torture(prog)


def test_shell_rewrites_a_file_in_place(tmp_path):
    """`echo > file` truncates and rewrites a file the next step reads: its old bytes come back."""
    prog = programs.script(f"{tmp_path}/count.sh", """#!/bin/sh
echo 0 > n
i=0
while [ $i -lt 300 ]; do
  v=$(cat n)
  echo $((v + i)) > n
  i=$((i + 1))
done
cat n
""")
    torture(prog, kills=20)


def test_a_name_written_to_proc_is_no_file_change(tmp_path):
    """A shell that names itself through /proc/PID/comm (as pthread_setname_np does for another
    thread) while it appends to a file: /proc is the kernel's state, not a file to put back or
    watch -- the resumes go on and the output is the native run's."""
    prog = programs.script(f"{tmp_path}/named.sh", """#!/bin/sh
i=0
while [ $i -lt 3000 ]; do
  echo "w$((i % 10))" > /proc/$$/comm
  i=$((i + 1))
  echo $i >> out
done
cat /proc/$$/comm
wc -l < out
""")
    torture(prog, kills=10)


# ---------------------------------------------------------------- output to fd 1 and 2 (filefilter.h)

def killed_once_in_the_middle(tmp_path, pool_dir, prog):
    """Run prog natively, then under prosper until it made the file `ready` and two more
    checkpoints were committed, kill it a little later (its changes after the checkpoint), resume
    it (`prosper resume >> out`): output, exit code and files must be the native run's.  One kill
    at the moment that matters, rather than random ones that may all fall before it."""
    native_dir, run_dir = tmp_path / "native", tmp_path / "run"
    native_dir.mkdir()
    run_dir.mkdir()
    with open(tmp_path / "native.out", "wb") as f:  # a file, like the run's: the program may seek on it
        native = subprocess.run([prog], cwd=native_dir, stdout=f, stderr=subprocess.PIPE, timeout=120)
    native.stdout = (tmp_path / "native.out").read_bytes()
    pool = os.path.join(pool_dir, "once.prosper")
    out = tmp_path / "out"
    with open(out, "wb") as f:
        p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", prog], cwd=run_dir, stdout=f,
                             stderr=subprocess.PIPE, start_new_session=True)
        checkpoints_after(pool, run_dir / "ready", n=2)
        time.sleep(0.03)
        assert p.poll() is None, p.stderr.read()
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=run_dir, stdout=f, stderr=subprocess.PIPE,
                           timeout=120)
    assert r.returncode == native.returncode, r.stderr
    assert out.read_bytes() == native.stdout
    def files(d):
        return {n: (d / n).read_bytes() for n in sorted(os.listdir(d))}
    assert files(run_dir) == files(native_dir)


# 400 steps, each reading a counter back through fd {read} and rewriting it in place through fd 1
# (seek, write); the file `ready` after 50 of them.
REWRITE_FD1 = """for i in range(400):
    n = int(os.pread({read}, 13, 0))
    os.lseek(1, 0, 0)
    os.write(1, b"%012d\\n" % (n + i))
    if i == 50:
        open("ready", "w").close()
    time.sleep(0.002)
"""


def test_stdout_redirected_to_a_file_and_rewritten_in_place(tmp_path, pool_dir):
    """Writes to the run's own stdout go through without a stop; a process that puts a file of its
    own on fd 1 (dup2) and rewrites it in place through fd 1 is tightened, so those rewrites are
    journalled and undone like any other: the final file and output are the native run's."""
    prog = programs.script(f"{tmp_path}/redirect.py", f"""#!/usr/bin/env python3
import os, time
print("to the run's stdout", flush=True)
saved = os.dup(1)
fd = os.open("counter", os.O_RDWR | os.O_CREAT, 0o644)
os.dup2(fd, 1)
os.write(1, b"%012d\\n" % 0)
{REWRITE_FD1.format(read="fd")}os.dup2(saved, 1)
print(int(os.pread(fd, 13, 0)))
""")
    killed_once_in_the_middle(tmp_path, pool_dir, prog)


def test_stdout_closed_then_a_file_takes_its_number(tmp_path, pool_dir):
    """close(1), then the next open gets fd 1: a file the process rewrites in place through fd 1.
    The close tightens the process: the rewrites are seen and undone."""
    prog = programs.script(f"{tmp_path}/reuse.py", """#!/usr/bin/env python3
import os, time
out = os.dup(1)
os.close(1)
fd = os.open("state", os.O_RDWR | os.O_CREAT, 0o644)
assert fd == 1
os.write(1, b"%012d\\n" % 0)
for i in range(400):
    n = int(os.pread(1, 13, 0))
    os.lseek(1, 0, 0)
    os.write(1, b"%012d\\n" % (n + 2 * i))
    if i == 50:
        open("ready", "w").close()
    time.sleep(0.002)
os.write(out, b"%d\\n" % int(os.pread(1, 13, 0)))
""")
    killed_once_in_the_middle(tmp_path, pool_dir, prog)


def test_the_runs_own_stdout_file_rewritten_in_place(tmp_path, pool_dir):
    """`prosper run ... > out` (not appending): the program seeks back on its own stdout and
    rewrites a counter it reads back through /proc/self/fd/1.  Such a stdout's writes are seen
    (only a pipe, terminal or a file open for appending is let through), so the rewrites after
    the checkpoint are undone."""
    prog = programs.script(f"{tmp_path}/ownout.py", f"""#!/usr/bin/env python3
import os, time
os.write(1, b"%012d\\n" % 0)
r = os.open("/proc/self/fd/1", os.O_RDONLY)
{REWRITE_FD1.format(read="r")}os.lseek(1, 0, 2)
os.write(1, b"end\\n")
""")
    killed_once_in_the_middle(tmp_path, pool_dir, prog)


def test_a_shell_that_redirects_itself(tmp_path, pool_dir):
    """`exec > file` in a shell script, then a loop that writes the file and empties it now and
    then (`: > log`): the shell's own writes to fd 1 are a file's now, seen and undone."""
    prog = programs.script(f"{tmp_path}/selfredirect.sh", """#!/bin/sh
echo start
exec 3>&1
exec > log
i=0
while [ $i -lt 700 ]; do
  echo "line $i"
  if [ $((i % 50)) -eq 49 ]; then : > log; fi
  if [ $i -eq 500 ]; then touch ready; fi
  if [ $i -gt 500 ]; then sleep 0.01; fi
  i=$((i + 1))
done
exec 1>&3
wc -l < log
""")
    killed_once_in_the_middle(tmp_path, pool_dir, prog)


def test_a_stderr_file_given_back_does_not_stop_stdout_writes(tmp_path, pool_dir):
    """The run's stdout a pipe (its writes let through), its stderr a file opened with `>` (its
    writes seen): a shell that silences stderr and gives the file back (`2>/dev/null`, as bash
    does around a builtin; pyenv's shims do it) must not have its stdout writes stopped from then
    on, nor those of every program it starts -- they go to the pipe.  Counted, not timed: the calls
    the filter sent (`file_calls_seen`) for 3000 one-byte writes to stdout."""
    prog = programs.script(f"{tmp_path}/quiet.sh", """#!/bin/sh
exec 3>&2
exec 2>/dev/null
exec 2>&3
python3 -S -c "
import os
for i in range(3000):
    os.write(1, b'x')
"
""")
    stats = tmp_path / "st.json"
    with open(tmp_path / "err", "wb") as err:
        r = subprocess.run([PROSPER, "run", "--stats-json", str(stats), "--pool", os.path.join(pool_dir, "q.prosper"),
                            "--", prog], cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, timeout=120)
    assert r.returncode == 0, (tmp_path / "err").read_text()
    assert r.stdout == b"x" * 3000
    st = json.loads(stats.read_text())
    assert st["file_calls_seen"] < 300, st  # 3000 and more when the shell was tightened


# ---------------------------------------------------------------- files held open with no name

def test_sqlite_temporary_files(tmp_path):
    """A TEMP table spilled to SQLite's temporary file (temp_store=FILE, a tiny cache): SQLite
    opens /var/tmp/etilqs_* and removes its name at once; the checkpoint keeps its bytes and a
    resume makes it again (it came back as "gone" before)."""
    lines = ["PRAGMA temp_store=FILE; PRAGMA temp.cache_size=5;",
             "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v INTEGER);",
             "CREATE TEMP TABLE scratch(k INTEGER, v TEXT);"]
    lines += [f"BEGIN; INSERT INTO scratch VALUES ({i}, printf('%.200c', '{i * 7}')); "
              f"INSERT INTO t(v) SELECT count(*) + {i} FROM scratch; COMMIT;" for i in range(300)]
    lines.append("SELECT count(*), sum(v) FROM t; SELECT count(*), sum(k) FROM scratch; PRAGMA integrity_check;")
    sql = programs.script(f"{tmp_path}/temp.sql", "\n".join(lines) + "\n")
    torture("/usr/bin/sqlite3", "data.db", f".read {sql}")


def test_files_held_open_with_no_name(tmp_path):
    """Python's tempfile.TemporaryFile (O_TMPFILE: never named) and a file opened, then removed,
    both written and read back for 20000 steps: their bytes at the checkpoint come back."""
    prog = programs.script(f"{tmp_path}/nameless.py", """#!/usr/bin/env python3
import os, tempfile
t = tempfile.TemporaryFile()
fd = os.open("scratch", os.O_RDWR | os.O_CREAT, 0o600)
os.unlink("scratch")
total = 0
for i in range(20000):
    t.write(b"%d\\n" % i)
    os.write(fd, b"x%d;" % (i % 97))
    if i % 100 == 99:
        t.flush()
        t.seek(0)
        total += sum(int(x) for x in t.read().split())
        os.lseek(fd, 0, 0)
        total += len(os.read(fd, 1 << 20))
print(total)
""")
    torture(prog)


def test_a_nameless_file_too_large_to_keep_is_refused(tmp_path, pool_dir):
    """A removed file of 24 MiB held open is more than a checkpoint keeps in its metadata (16 MiB
    of room in a pool `run` makes): said at run, and a resume refuses (fd-file-gone) rather than
    resuming without it."""
    work = tmp_path / "w"
    work.mkdir()
    prog = programs.script(f"{tmp_path}/big.py", """#!/usr/bin/env python3
import os, time
fd = os.open("big", os.O_RDWR | os.O_CREAT, 0o600)
os.unlink("big")
os.write(fd, b"z" * (24 << 20))
open("ready", "w").write("1")
while True:
    time.sleep(0.01)
""")
    pool = os.path.join(pool_dir, "p.prosper")
    err = []
    epoch = run_until_checkpoints(pool, work, [prog], work / "ready", stderr=err)
    assert "files held open with no name" in err[0] and "a resume of it is refused" in err[0], err[0]
    r = prosper("resume", "--json", "--pool", pool)
    assert r.returncode == 2, r.stderr
    refusal = json.loads(r.stderr.strip().splitlines()[-1])
    assert refusal["refused"] == "fd-file-gone", refusal
    assert _epoch(pool) == epoch


# ---------------------------------------------------------------- power cuts: undo before data

def test_power_cuts_leave_the_database_undoable(tmp_path):
    """The sqlite3 shell's transactions with the pool on a disk (two tiers, a durable copy every
    50 ms), each kill made a power cut: the fast pool gone, and every journal file cut back to
    the bytes the supervisor had flushed, while the database keeps every byte written -- what a
    power cut can leave if records are not flushed before the writes they undo.  Every resume
    goes back to the durable checkpoint and must still give the native run's output and
    database (docs/durability.md, "The file-undo journal and a power cut")."""
    sql = programs.script(f"{tmp_path}/load.sql", SQL_SCRIPT.format(mode="delete", body=sql_transactions(150)))
    disk = tmp_path / "pools"
    disk.mkdir()
    res = torture("/usr/bin/sqlite3", "data.db", f".read {sql}", kills=20, pool_dir=str(disk),
                  extra=["--power-cut", "--durable-every", "50ms"])
    assert res["resumes"] >= 10, res


def test_power_cuts_during_saves_by_rename(tmp_path):
    """Saving by a temporary file renamed over the state, under the same power cuts: a rename or
    a removal reaches the disk only after the record that undoes it."""
    prog = programs.script(f"{tmp_path}/saver.py", SAVER)
    disk = tmp_path / "pools"
    disk.mkdir()
    torture(prog, kills=20, pool_dir=str(disk), extra=["--power-cut", "--durable-every", "50ms"])


def test_power_cuts_during_rewrites_in_place(tmp_path):
    """A counter rewritten in place (pwrite at offset 0) every 10 ms, between durable copies 50 ms
    apart: the first rewrite after the durable checkpoint is the one whose record a power cut
    must not lose.  40 power cuts.  (With the bytes' records of every file left unflushed, this
    was refused as changed outside after 21 to 30 cuts on three seeds; in the tests above each
    transaction's other records are flushed soon after and hide that mistake.)"""
    prog = programs.script(f"{tmp_path}/counter.py", """#!/usr/bin/env python3
import os, time
fd = os.open("counter", os.O_RDWR | os.O_CREAT, 0o644)
if os.fstat(fd).st_size == 0:
    os.pwrite(fd, b"%012d\\n" % 0, 0)
    os.fsync(fd)
for i in range(150):
    n = int(os.pread(fd, 13, 0))
    time.sleep(0.01)
    os.pwrite(fd, b"%012d\\n" % (n + i), 0)
print(int(os.pread(fd, 13, 0)))
""")
    disk = tmp_path / "pools"
    disk.mkdir()
    torture(prog, kills=40, pool_dir=str(disk), extra=["--power-cut", "--durable-every", "50ms"])


def test_a_process_left_running_keeps_writing_after_prosper_ends(tmp_path, pool_dir):
    """`sh -c '(sleep 3; ...) & exit 0'`: prosper ends with the shell, the background job goes on
    under the filter, and its writes -- its own and its children's (`echo`, `cp`) -- reach the files
    after prosper is gone (they failed with ENOSYS before the drainer)."""
    pool = os.path.join(pool_dir, "left.prosper")
    t0 = time.monotonic()
    with open(tmp_path / "err", "w") as err:  # not a pipe: the job holds what it inherits open
        r = subprocess.run([PROSPER, "run", "--pool", pool, "--", "sh", "-c",
                            "(sleep 3; echo late > f; echo more >> f; cp f g; mkdir d; mv g d/h) & exit 0"],
                           cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, timeout=60)
    assert r.returncode == 0, (tmp_path / "err").read_text()
    # prosper did not wait for the job: it ended before the job's first write (a bound on the
    # time it took failed on a loaded machine)
    assert not (tmp_path / "f").exists(), time.monotonic() - t0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (tmp_path / "d" / "h").exists():
        time.sleep(0.05)
    assert time.monotonic() - t0 > 2.9  # its sleep ran its seconds: not killed with prosper (EXITKILL)
    time.sleep(0.2)
    assert (tmp_path / "f").read_text() == "late\nmore\n"
    assert (tmp_path / "d" / "h").read_text() == "late\nmore\n"


def test_a_process_left_in_a_vfork_at_the_end_is_let_go(tmp_path, pool_dir):
    """The program ends while a process it leaves behind waits in the kernel for its vforked child
    (dash runs commands so: `sh -c '(sleep 1; ...) & exit 0'` hung prosper in one run of 65 on a
    loaded machine).  The parent cannot stop until the child executes a program, and the child
    sat in a filtered call waiting for us: prosper waited for ever.  Now the child is let run
    first; prosper ends, and what the child wrote and copied is there."""
    prog = os.path.join(BUILD, "tests", "supervisor", "vforkleft")
    with open(tmp_path / "err", "w") as err:
        r = subprocess.run([PROSPER, "run", "--pool", os.path.join(pool_dir, "v.prosper"), "--", prog], cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=err, timeout=60)
    assert r.returncode == 0, (tmp_path / "err").read_text()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (tmp_path / "vforkleft.b").exists():
        time.sleep(0.05)
    time.sleep(0.2)
    assert (tmp_path / "vforkleft.a").read_text() == "written in a vfork\n"
    assert (tmp_path / "vforkleft.b").read_text() == "written in a vfork\n"


# ---------------------------------------------------------------- refusals that touch nothing

def _epoch(pool):
    r = prosper("inspect", "--json", pool)
    info = json.loads(r.stdout) if r.returncode == 0 else None
    return (info["fast_pool"] or info)["epoch"] if info else 0


def checkpoints_after(pool, ready, n=1, timeout=60):
    """Wait until the file `ready` exists, then until n more checkpoints of pool are committed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not os.path.exists(ready):
        time.sleep(0.005)
    first = _epoch(pool)
    while time.monotonic() < deadline and _epoch(pool) < first + n:
        time.sleep(0.005)
    return deadline


def run_until_checkpoints(pool, cwd, prog, ready, n=3, stderr=None, extra=(), written_after=False):
    """Run prog until the file `ready` has bytes and n checkpoints were committed after that, then
    kill its process group a little later: the file is in the checkpoint the resume goes back to.
    written_after: kill only once `ready` was seen to change after the last commit (a program whose
    writes stall on a loaded machine could otherwise leave the checkpoint resumed from with nothing
    written after it).  What the run said on stderr is appended to the list `stderr` if one is given."""
    p = subprocess.Popen([PROSPER, "run", *extra, "--pool", pool, "--", *prog], cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (os.path.exists(ready) and os.path.getsize(ready)):
        time.sleep(0.01)
    first = _epoch(pool)
    while time.monotonic() < deadline and _epoch(pool) < first + n:
        time.sleep(0.01)
    while written_after and time.monotonic() < deadline:
        epoch, was = _epoch(pool), open(ready, "rb").read()
        while time.monotonic() < deadline and open(ready, "rb").read() == was:
            time.sleep(0.005)
        if _epoch(pool) == epoch:
            break  # a write after the commit of the epoch the kill leaves: kill now
    if not written_after:
        time.sleep(0.1)  # changes after the checkpoint
    assert p.poll() is None, p.stderr.read()
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    if stderr is not None:
        stderr.append(p.stderr.read().decode())
    return _epoch(pool)


def tree_of(d):
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[p] = (f.read(), os.stat(p).st_mtime_ns)
    return out


def test_file_changed_by_another_process_is_refused(tmp_path, pool_dir):
    """A file the program holds open, appended to by someone else after the checkpoint: resume
    refuses with file-changed-outside, exit 2, and leaves the file and the pool as they were."""
    work = tmp_path / "w"
    work.mkdir()
    prog = programs.script(f"{tmp_path}/holder.py", """#!/usr/bin/env python3
import time
f = open("data", "w")
f.write("the program's line\\n")
f.flush()
while True:
    time.sleep(0.01)
""")
    pool = os.path.join(pool_dir, "p.prosper")
    epoch = run_until_checkpoints(pool, work, [prog], work / "data")
    with open(work / "data", "a") as f:
        f.write("another process's line\n")
    before = tree_of(work)
    r = prosper("resume", "--json", "--pool", pool)
    assert r.returncode == 2, r.stderr
    refusal = json.loads(r.stderr.strip().splitlines()[-1])
    assert refusal["refused"] == "file-changed-outside", refusal
    assert str(work / "data") in refusal["message"], refusal
    assert tree_of(work) == before
    assert _epoch(pool) == epoch


@pytest.fixture
def fuse_dir(tmp_path):
    """A directory on a FUSE file system (bindfs over a local one): not local for the journal."""
    if not os.path.exists("/dev/fuse") or not shutil.which("bindfs"):
        pytest.skip("needs /dev/fuse and bindfs (scripts/setup installs bindfs)")
    src, mnt = tmp_path / "fuse-src", tmp_path / "fuse"
    src.mkdir()
    mnt.mkdir()
    r = subprocess.run(["bindfs", str(src), str(mnt)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a FUSE file system here: {r.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_file_on_a_network_file_system_warns_then_refuses(tmp_path, pool_dir, fuse_dir):
    """A file rewritten in place on a FUSE file system (one that another machine or process may
    change too): a warning on stderr while the program runs, and a resume from a checkpoint
    before the rewrite refuses with file-not-undoable, exit 2, the file and the pool untouched."""
    work = tmp_path / "w"
    work.mkdir()
    prog = programs.script(f"{tmp_path}/counter.py", f"""#!/usr/bin/env python3
import os, time
fd = os.open("{fuse_dir}/count", os.O_RDWR | os.O_CREAT, 0o644)
i = 0
while True:
    os.pwrite(fd, b"%08d\\n" % i, 0)
    i += 1
    time.sleep(0.002)
""")
    pool = os.path.join(pool_dir, "p.prosper")
    err = []
    # a checkpoint a second, and the kill only after a write seen after the last commit: a loaded
    # machine's FUSE daemon could let the last cut come after the last write (twice in CI), and
    # the resume rightly had nothing to refuse
    epoch = run_until_checkpoints(pool, work, [prog], fuse_dir / "count", stderr=err, extra=("--interval", "1000"),
                                  written_after=True)
    assert "fuse, a file system others can change too" in err[0], err[0]
    assert "file-not-undoable" in err[0], err[0]
    before = (fuse_dir / "count").read_bytes()
    try:  # a resume that goes on runs the program for ever: a failure, not a hang
        r = prosper("resume", "--json", "--pool", pool, timeout=60, start_new_session=True)
    except subprocess.TimeoutExpired:
        raise AssertionError("the resume was not refused: it ran the program")
    assert r.returncode == 2, r.stderr
    refusal = json.loads(r.stderr.strip().splitlines()[-1])
    assert refusal["refused"] == "file-not-undoable", refusal
    assert str(fuse_dir / "count") in refusal["message"], refusal
    assert (fuse_dir / "count").read_bytes() == before
    assert _epoch(pool) == epoch


def test_a_file_rewritten_through_a_shared_mapping(tmp_path):
    """A table updated in place through mmap(MAP_SHARED): no call shows those stores, so every cut
    keeps the file whole and a resume puts it back as it was at its checkpoint."""
    prog = programs.script(f"{tmp_path}/mapper.py", """#!/usr/bin/env python3
import mmap
with open("table", "wb") as f:
    f.write(bytes(8192))
f = open("table", "r+b")
m = mmap.mmap(f.fileno(), 8192)
for i in range(600000):
    k = (i * 7919) % 8192
    m[k] = (m[k] + m[(k + 1) % 8192] + 1) % 256
m.flush()
print(sum(m))
""")
    torture(prog)


def test_sqlite_shell_wal_mode(tmp_path):
    """WAL mode: the transactions go to data.db-wal, and the WAL index data.db-shm is mapped shared
    and writable (kept whole at each cut); checkpoints of the WAL rewrite the database in place.
    1200 transactions (0.32 s natively): with 400 (0.14 s) a clean-clone CI run finished the program
    after 12 of its 30 kills (attempts that commit nothing new are given longer: backoff)."""
    sql = programs.script(f"{tmp_path}/load.sql", SQL_SCRIPT.format(mode="wal", body=sql_transactions(1200)))
    torture("/usr/bin/sqlite3", "data.db", f".read {sql}")


def c_project(d, nfiles):
    """A C project of nfiles sources, one header and a Makefile; the program prints a sum of what
    every file's function returns."""
    src = d / "proj"
    src.mkdir()
    (src / "f.h").write_text("".join(f"int f{i}(int);\n" for i in range(nfiles)))
    for i in range(nfiles):
        (src / f"f{i}.c").write_text(f'#include "f.h"\nint f{i}(int x) {{ int s = 0; for (int k = 0; k < {i + 3}; k++) '
                                     f's += (x ^ k) * {i + 1}; return s; }}\n')
    calls = " + ".join(f"f{i}(argc)" for i in range(nfiles))
    (src / "main.c").write_text(f'#include <stdio.h>\n#include "f.h"\nint main(int argc, char **argv) {{ (void)argv; '
                                f'printf("%d\\n", {calls}); return 0; }}\n')
    objs = " ".join(f"f{i}.o" for i in range(nfiles))
    (src / "Makefile").write_text(f"prog: main.o {objs}\n\tcc -o $@ $^\n%.o: {src}/%.c {src}/f.h\n\tcc -O1 -c -o $@ $<\n")
    return src


def test_make_builds_a_c_project(tmp_path):
    """`make -j2` building a C project in the working directory (objects and the program there,
    the compiler's temporary files in /tmp made and removed) is killed and resumed; then the
    program it built runs: same exit status, same output, the same objects byte for byte."""
    n, kills = (110, 30) if LONG else (40, 10)
    src = c_project(tmp_path, n)
    build = programs.script(f"{tmp_path}/build.sh", f"""#!/bin/sh
make -s -j2 -f {src}/Makefile || exit 1
./prog
""")
    torture(build, kills=kills)


def test_git_commits_in_a_loop(tmp_path):
    """`git` commits 120 times in a repository it made (adds, removes, a lock file and a rename of
    the index at every commit, loose objects written once); killed 30 times with the pool on a
    disk (two tiers): `git fsck --full --strict` is clean and the history the same commit for
    commit (fixed dates make the hashes reproducible).  The index, which holds inode numbers and
    change times, is removed at the end; everything else in .git is compared byte for byte."""
    prog = programs.script(f"{tmp_path}/commits.sh", """#!/bin/sh
set -e
export GIT_AUTHOR_NAME=ann GIT_AUTHOR_EMAIL=ann@example.org GIT_COMMITTER_NAME=ann GIT_COMMITTER_EMAIL=ann@example.org
export GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z
export GIT_CONFIG_NOSYSTEM=1 HOME="$PWD"
git init -q -b main repo
cd repo
i=0
while [ $i -lt 120 ]; do
  echo "line $i" >> notes
  echo "$i" > "f$((i % 10))"
  if [ $((i % 7)) -eq 3 ]; then git rm -q --ignore-unmatch "f$(((i + 5) % 10))"; fi
  git add -A
  git commit -q -m "step $i"
  i=$((i + 1))
done
git fsck --full --strict --no-progress
git status --porcelain
git rev-list --count HEAD
git log -1 --format=%H
rm -f .git/index
""")
    disk = tmp_path / "pools"  # the test machine's disk: two tiers, journal beside the durable pool
    disk.mkdir()
    torture(prog, pool_dir=str(disk))


def test_a_rename_recorded_but_never_run_is_not_moved_back(tmp_path, pool_dir):
    """The run dies at the stop of a save by rename, once the rename is recorded and before it runs
    (PROSPER_TEST_DIE_AT_CALL: a `kill -9` at that instant).  The resume must leave both names as
    they are and the program renames again: moving the destination back onto the source would
    hand it its old file as the new one (under load, git's update of a branch so lost a commit)."""
    prog = programs.script(f"{tmp_path}/save.py", """#!/usr/bin/env python3
import os, time
with open("target", "w") as f:
    f.write("old\\n")
with open("tmp", "w") as f:
    f.write("new\\n")
open("ready", "w").close()
while not os.path.exists("go"):
    time.sleep(0.005)
os.rename("tmp", "target")
print(open("target").read().strip(), os.path.exists("tmp"))
""")
    pool = os.path.join(pool_dir, "save.prosper")
    renames = ",".join(str(n) for n in (82, 264, 316))  # rename, renameat, renameat2 (x86-64)
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", prog], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True,
                         env=dict(os.environ, PROSPER_TEST_DIE_AT_CALL=renames))
    checkpoints_after(pool, tmp_path / "ready", n=2)
    (tmp_path / "go").write_text("")
    assert p.wait(timeout=60) == -signal.SIGKILL, p.stderr.read()
    assert (tmp_path / "target").read_text() == "old\n"  # the rename never ran
    r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "new False\n"
    assert (tmp_path / "target").read_text() == "new\n"


def test_a_mapped_file_replaced_by_the_program_resumes(tmp_path, pool_dir):
    """A program maps a file privately, then replaces it by a rename (a new inode, a new size) and
    maps the new one -- `git init` so rewrites .git/config -- and is killed.  The resume checks the
    mapped file against the one at the checkpoint, not the one first seen under that name (that
    refused with file-changed)."""
    prog = programs.script(f"{tmp_path}/remap.py", """#!/usr/bin/env python3
import mmap, os, time
def replace(text):
    with open("conf.lock", "w") as f:
        f.write(text)
    os.rename("conf.lock", "conf")
    with open("conf", "rb") as f:
        return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
m = replace("first\\n")
open("ready", "w").close()
while not os.path.exists("go"):
    time.sleep(0.005)
m.close()
m = replace("second, longer\\n")
open("ready2", "w").close()
while not os.path.exists("go2"):
    time.sleep(0.005)
print(m[:].decode().strip())
""")
    pool = os.path.join(pool_dir, "remap.prosper")
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--", prog], cwd=tmp_path, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    checkpoints_after(pool, tmp_path / "ready", n=2)
    (tmp_path / "go").write_text("")
    checkpoints_after(pool, tmp_path / "ready2", n=2)
    assert p.poll() is None, p.stderr.read()
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    (tmp_path / "go2").write_text("")
    r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "second, longer\n"


def test_a_mapped_file_the_program_resizes_after_a_cut_resumes(tmp_path, pool_dir):
    """A file mapped shared and writable is kept whole at each cut; the program then resizes it
    (Open MPI's shared segments, a database's mapped index growing) and is killed before the next
    cut.  The resize is the program's own: the resume undoes it -- the file as at the checkpoint --
    and is not refused as a change by another process (the cut's copy had hidden the program's
    record of it, file-changed-outside)."""
    work = tmp_path / "w"
    work.mkdir()
    prog = programs.script(f"{tmp_path}/grow.py", """#!/usr/bin/env python3
import mmap, os, time
with open("seg", "wb") as f:
    f.write(bytes(4096))
f = open("seg", "r+b")
m = mmap.mmap(f.fileno(), 4096)
m[0] = 1
open("ready", "w").write("1")
while not os.path.exists("go"):
    time.sleep(0.005)
os.ftruncate(f.fileno(), 8192)
m[1] = 2
open("changed", "w").write("1")
while not os.path.exists("end"):
    time.sleep(0.005)
print(os.fstat(f.fileno()).st_size, m[0], m[1])
""")
    pool = os.path.join(pool_dir, "p.prosper")
    # a checkpoint every 500 ms: the resize and the kill fall between two of them
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--interval", "500", "--", prog], cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = checkpoints_after(pool, work / "ready")
    epoch = _epoch(pool)
    (work / "go").write_text("")
    while time.monotonic() < deadline and not (work / "changed").exists():
        time.sleep(0.005)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert _epoch(pool) == epoch, "a cut came between the resize and the kill: nothing to undo"
    assert os.path.getsize(work / "seg") == 8192
    # resumes that die in the undo (after a record, or after one and before noting it), then one
    # stopped once the undo is done, before the program runs: each a crash hook's exit 3
    for point in ("0", "1+", "2", "-2"):
        r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=work, capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, PROSPER_TEST_UNDO_CRASH_AFTER=point))
        assert r.returncode == 3, (point, r.stderr)
    assert (work / "seg").read_bytes() == b"\x01" + bytes(4095)
    (work / "end").write_text("")
    r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=work, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "8192 1 2\n"


def test_directory_times_and_entries_are_put_back(tmp_path, pool_dir):
    """Entries made, removed and renamed in a directory after the checkpoint: the resume's undo
    (stopped right after it, before the program runs again) leaves the directory's entries and
    its modification time as they were at the checkpoint -- `make` and `rsync` read them."""
    work = tmp_path / "w"
    work.mkdir()
    prog = programs.script(f"{tmp_path}/dirs.py", """#!/usr/bin/env python3
import os, time
os.mkdir("d")
for n in ("keep", "gone", "old"):
    open(f"d/{n}", "w").write(n)
open("ready", "w").write("1")
while not os.path.exists("go"):
    time.sleep(0.005)
open("d/new", "w").write("new")
os.unlink("d/gone")
os.rename("d/old", "d/renamed")
os.mkdir("d/sub")
open("changed", "w").write("1")
while True:
    time.sleep(0.01)
""")
    pool = os.path.join(pool_dir, "p.prosper")
    # a checkpoint every 500 ms: the changes and the kill fall between two of them
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--interval", "500", "--", prog], cwd=work,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = checkpoints_after(pool, work / "ready")
    at_checkpoint = (sorted(os.listdir(work / "d")), os.stat(work / "d").st_mtime_ns)
    (work / "go").write_text("")
    while time.monotonic() < deadline and not (work / "changed").exists():
        time.sleep(0.01)
    assert sorted(os.listdir(work / "d")) != at_checkpoint[0]
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=work, capture_output=True,
                       env=dict(os.environ, PROSPER_TEST_UNDO_CRASH_AFTER="-2"))
    assert r.returncode == 3, r.stderr  # the hook: stopped after the undo, before the program runs
    assert (sorted(os.listdir(work / "d")), os.stat(work / "d").st_mtime_ns) == at_checkpoint


def killed_after_a_checkpoint(tmp_path, pool, prog, out, after):
    """Run prog natively (its stdout returned) and under prosper with a checkpoint a second, in
    tmp_path/native and tmp_path/run, the run's stdout to the open file out; kill the run `after`
    seconds after the first checkpoint that follows its file `ready`: many changes to undo."""
    native_dir, run_dir = tmp_path / "native", tmp_path / "run"
    native_dir.mkdir()
    run_dir.mkdir()
    native = subprocess.run([prog], cwd=native_dir, capture_output=True, check=True).stdout
    p = subprocess.Popen([PROSPER, "run", "--pool", pool, "--interval", "1000", "--", prog], cwd=run_dir,
                         stdout=out, stderr=subprocess.PIPE, start_new_session=True)
    checkpoints_after(pool, run_dir / "ready")
    time.sleep(after)
    assert p.poll() is None
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    return native


def resumes_dying_at(pool, run_dir, out, points):
    """A resume per crash point (PROSPER_TEST_UNDO_CRASH_AFTER), each dying in its undo: their exit
    codes; then one that completes: its CompletedProcess."""
    codes = []
    for n in points:
        r = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=run_dir, stdout=out, stderr=subprocess.PIPE,
                           env=dict(os.environ, PROSPER_TEST_UNDO_CRASH_AFTER=n), timeout=120)
        codes.append(r.returncode)
    done = subprocess.run([PROSPER, "resume", "--pool", pool], cwd=run_dir, stdout=out, stderr=subprocess.PIPE,
                          text=True, timeout=300)
    return codes, done


def test_an_exchange_undone_twice_is_not_swapped_back(tmp_path, pool_dir):
    """renameat2(RENAME_EXCHANGE) back and forth; resumes that die right after undoing a record but
    before noting it, five in a row, each redoing the last one's record first: an exchange undone
    again must not swap the two files back (the name it came from holds its inode already)."""
    prog = programs.script(f"{tmp_path}/swap.py", """#!/usr/bin/env python3
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
for n in ("x1", "x2"):
    with open(n, "w") as f:
        f.write(n + "\\n")
open("ready", "w").close()
for i in range(3000):
    if libc.renameat2(-100, b"x1", -100, b"x2", 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
    time.sleep(0.001)
print(open("x1").read().strip(), open("x2").read().strip())
""")
    native_dir, run_dir = tmp_path / "native", tmp_path / "run"
    pool = os.path.join(pool_dir, "swap.prosper")
    with open(tmp_path / "out", "wb") as f:
        native = killed_after_a_checkpoint(tmp_path, pool, prog, f, 0.2)
        codes, r = resumes_dying_at(pool, run_dir, f, ("0+", "1+", "2+", "3+", "4+"))
    out = tmp_path / "out"
    assert codes == [3] * 5, codes
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == native
    assert (run_dir / "x1").read_bytes() == (native_dir / "x1").read_bytes()


def test_a_resume_that_dies_while_undoing_is_undone_again(tmp_path, pool_dir):
    """Crash points of the undo itself: resumes that die after undoing 1, 2, 5, 13, 40 more records,
    or after all of them but before the journal restarts, then one that completes -- the program
    ends as a native run does, every file byte for byte.  (Undoing again from the newest record
    moved a file made again under a name a rename was undone to over the right one: each resume
    now goes on after the records the one before it undid.)"""
    prog = programs.script(f"{tmp_path}/churn.py", """#!/usr/bin/env python3
import hashlib, os, time
os.makedirs("d", exist_ok=True)
os.makedirs("r", exist_ok=True)
for name in ("a", "b"):
    with open(name, "w") as f:
        f.write(name + "0\\n")
for i in range(1000):                               # each renamed over its pair once, later
    for p in ("r", "s"):
        with open(f"r/{p}{i}", "w") as f:
            f.write(f"{p}{i}\\n")
open("ready", "w").close()
for i in range(1000):
    os.replace(f"r/r{i}", f"r/s{i}")
    with open("a", "r+") as f:                      # in place
        f.write(f"a{i % 97:03}\\n")
    with open("t", "w") as f:                       # a temporary file renamed over another
        f.write(f"t{i}\\n" * (i % 5 + 1))
    os.replace("t", "b" if i % 2 else "c")
    if i % 3 == 0:
        os.rename("c", "e") if os.path.exists("c") else None
    with open(f"d/x{i % 4}", "w") as f:             # made, truncated, removed
        f.write(open("b").read()[:20] + str(i))
    if i % 4 == 3:
        os.unlink(f"d/x{i % 2}")
    time.sleep(0.001)
for root, _, names in sorted(os.walk(".")):
    if root != "./r":
        for n in sorted(names):
            print(os.path.join(root, n), open(os.path.join(root, n)).read().replace("\\n", "|")[:60])
print(hashlib.sha256("".join(n + open("r/" + n).read() for n in sorted(os.listdir("r"))).encode()).hexdigest())
""")
    native_dir, run_dir = tmp_path / "native", tmp_path / "run"
    pool = os.path.join(pool_dir, "churn.prosper")
    out = tmp_path / "out"
    with open(out, "wb") as f:
        # the renames of pairs that were there at the checkpoint, and more: hundreds to undo
        native = killed_after_a_checkpoint(tmp_path, pool, prog, f, 0.3)
        undone_at_crash, r = resumes_dying_at(pool, run_dir, f, ("1", "2", "5", "13", "40", "-2"))
    assert undone_at_crash == [3] * 6, undone_at_crash
    assert r.returncode == 0, r.stderr
    # each of the five went on where the one before stopped: 61 records undone before the last
    assert out.read_bytes() == native
    assert tree_of(run_dir).keys() == {str(run_dir / k) for k in (os.path.relpath(p, native_dir) for p in tree_of(native_dir))}
    for path, (data, _) in tree_of(native_dir).items():
        assert tree_of(run_dir)[str(run_dir / os.path.relpath(path, native_dir))][0] == data, path
