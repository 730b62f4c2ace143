"""Kill a program with SIGKILL at random instants under `prosper run`, resume it each time, and
compare its final stdout, exit code and output files byte for byte with a native run.

The program runs in an empty working directory (native and supervised each get their own), so
files it creates by relative path are compared too; name inputs by absolute path.  Every other
attempt sets a test hook that holds each checkpoint open for a few milliseconds between writing
its data and committing, so those kills often land in the middle of a commit.  A kill before the
first checkpoint leaves nothing to resume: the attempt is started again with --fresh.  A kill that
lands after the program exited and the pool recorded its exit code (while the supervisor closes
the pool) leaves a finished pool: that recorded code is the run's exit code.

With --pool-dir on a disk the pool has two tiers (docs/durability.md): checkpoints go into a fast
pool in memory (here a private directory given as PROSPER_FAST_DIR) and are copied into the pool
every --durable-every.  --power-cut then removes the fast pool after every kill, as a reboot
would, so that every resume continues from the durable pool alone, and cuts the file-undo journal
back to what the supervisor had flushed (PROSPER_TEST_JOURNAL_DURABLE, undolog.h): the program's
files keep every byte it wrote, their undo records only the flushed ones -- the order a power cut
can leave.  (The durable pool's writes not yet flushed are lost in a real power cut too;
`prosper crashtest` covers that part.)

JSON keys: kills, resumes, identical, checkpoints, kills_in_commit_window, fresh_starts,
snapshot_views_last_attempt (checkpoints of the last attempt read from a copy-on-write view),
exit_found_after_kill (the last kill landed after the program's exit was recorded: no resume
followed it),
native_seconds, supervised_seconds, differences, workdir and pool (kept with --keep, and whenever
the run differed)."""
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from prosper.paths import die, tool
from prosper.procs import end_group, wait_group_gone

EXAMPLE = "prosper torture --kills 10 -- sh -c 'seq 1 3000000 | md5sum'"  # shown by --help

SUPERVISOR = "src/supervisor/prosper-supervise"
POOL_TOOL = "src/cli/prosper-pool"
COMMIT_DELAY_US = 3000


def refusal(stderr):
    """The refusal `prosper run/resume --json` printed as its last JSON line on stderr
    (src/supervisor/base/refusal.h: {"refused": CODE, "message": ..., ["exit_code": N]}), or None."""
    for line in reversed(stderr.splitlines()):
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "refused" in obj:
            return obj
    return None


def outcome(returncode, stderr):
    """What an attempt that was not killed means: ("fresh", None) when it was a resume of a pool
    without a checkpoint (start again), ("finished", CODE) when the pool said the program had
    already exited with CODE, ("exit", returncode) otherwise.  Read from the refusal's stable
    code, never from its wording."""
    r = refusal(stderr) if returncode == 2 else None
    if r and r["refused"] == "no-checkpoint":
        return "fresh", None
    if r and r["refused"] == "finished":
        return "finished", int(r["exit_code"])
    return "exit", returncode


def add_arguments(p):
    p.add_argument("--kills", type=int, default=10, help="SIGKILLs to deliver (default 10)")
    p.add_argument("--seed", type=int, default=1, help="random seed of the kill instants (default 1)")
    p.add_argument("--interval", type=float, default=10.0, help="checkpoint interval in ms (default 10)")
    p.add_argument("--max-overhead", default="0",
                   help="the overhead budget of the runs (prosper run --max-overhead; default 0: a checkpoint "
                        "every --interval, the most for the kills to fall between)")
    p.add_argument("--metadata", choices=["rewrite", "log"], default=None,
                   help="how each checkpoint keeps registers, map and fds (prosper run --metadata)")
    p.add_argument("--copy", choices=["stop", "precopy"], default=None,
                   help="when each checkpoint's written memory is read (prosper run --copy)")
    p.add_argument("--snapshot", choices=["auto", "fork", "copy"], default=None,
                   help="how a large checkpoint is read: fork forces the copy-on-write view whenever "
                        "one can be made (prosper run --snapshot)")
    p.add_argument("--host-pids", action="store_true",
                   help="the program keeps the system's ids, which change at every resume (prosper run --host-pids); "
                        "its file changes are not seen, so each resume vouches for them (--trust-files): "
                        "use it for programs that change no file but their stdout")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--keep", action="store_true", help="keep the working directory and the pool for inspection (a run that differed always keeps them)")
    p.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds (default 600)")
    p.add_argument("--pool-dir", default=None,
                   help="where the pool lives (default /dev/shm when it exists: kill -9 tests process death, "
                        "not power loss, and a memory file system keeps the test fast)")
    p.add_argument("--durable-every", default=None,
                   help="with a pool on a disk: how often the fast pool is copied into it (default 1s)")
    p.add_argument("--power-cut", action="store_true",
                   help="after every kill remove the fast pool, as a reboot would: each resume continues "
                        "from the durable pool (needs --pool-dir on a disk)")
    p.add_argument("program", nargs="+", help="-- PROGRAM [ARGS...]")


def _files(root):
    """Every file under root: a regular file by its bytes, anything else (a socket, a FIFO, a
    link) by its kind, which is all a run can be compared on."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            path = os.path.join(d, n)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    out[os.path.relpath(path, root)] = f.read()
            else:
                out[os.path.relpath(path, root)] = f"<{stat.S_IFMT(st.st_mode):o}>".encode()
    return out


def _journal_power_cut(undo_dir):
    """What a power cut leaves of the file-undo journal: each journal file cut back to the longest
    length noted flushed since its last restart (PROSPER_TEST_JOURNAL_DURABLE, undolog.h), one
    never flushed removed."""
    if not os.path.isdir(undo_dir):
        return
    durable = {}
    notes = os.path.join(undo_dir, "durable-lengths")
    if os.path.exists(notes):
        with open(notes) as f:
            for line in f:
                seq, n = line.split()
                if n == "restart":
                    durable[int(seq)] = 0
                else:
                    durable[int(seq)] = max(durable.get(int(seq), 0), int(n))
    for name in os.listdir(undo_dir):
        if not name.endswith(".undo"):
            continue
        path = os.path.join(undo_dir, name)
        seq = int(name[:-len(".undo")])
        if seq in durable:
            os.truncate(path, min(durable[seq], os.path.getsize(path)))
        else:
            os.unlink(path)


def _epoch(pool):
    """The pool's committed epoch (0 if it cannot be read)."""
    r = subprocess.run([tool(POOL_TOOL), "inspect", "--json", pool], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["epoch"] if r.returncode == 0 else 0
    except (ValueError, KeyError):
        return 0


def _fast_pools(fast_dir):
    """The fast pools of two tiers under fast_dir (PROSPER_FAST_DIR/prosper-UID/*.prosper)."""
    mine = os.path.join(fast_dir, f"prosper-{os.geteuid()}")
    return [os.path.join(mine, n) for n in os.listdir(mine) if n.endswith(".prosper")] if os.path.isdir(mine) else []


def _progress(pool, fast_dir):
    """The newest committed epoch of the pool or of its fast pool: is the program getting anywhere?"""
    return max([_epoch(pool)] + [_epoch(f) for f in _fast_pools(fast_dir)])


def main(args):
    prog = args.program
    if args.kills < 0:
        die("--kills must be >= 0")
    # the program runs in other working directories: name it by an absolute path
    found = shutil.which(prog[0]) if "/" not in prog[0] else (os.path.abspath(prog[0]) if os.access(prog[0], os.X_OK) else None)
    if not found:
        die(f"{prog[0]}: no such program")
    prog = [found] + list(prog[1:])
    sup = tool(SUPERVISOR)
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="prosper-torture-")
    native_dir, run_dir = os.path.join(work, "native"), os.path.join(work, "run")
    os.mkdir(native_dir)
    os.mkdir(run_dir)
    pool_dir = args.pool_dir or ("/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else work)
    pool = os.path.join(pool_dir, f"prosper-torture-{os.getpid()}-{os.path.basename(work)}.prosper")
    # the fast pool of two tiers in a directory of this run's own, on a memory file system
    fast_dir = tempfile.mkdtemp(prefix="prosper-torture-fast-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    deadline = time.monotonic() + args.timeout

    t0 = time.monotonic()
    with open(os.path.join(work, "native.stdout"), "wb") as out:
        native = subprocess.Popen(prog, cwd=native_dir, stdout=out, stdin=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            native.wait(timeout=args.timeout)
        finally:
            left_native = end_group(native.pid)  # and, on a timeout, the program itself
    native_s = time.monotonic() - t0

    stats = os.path.join(work, "stats.json")
    common = ["--json", "--pool", pool, "--interval", str(args.interval), "--max-overhead", str(args.max_overhead),
              "--stats-json", stats]
    if args.metadata:
        common += ["--metadata", args.metadata]
    if args.copy:
        common += ["--copy", args.copy]
    if args.snapshot:
        common += ["--snapshot", args.snapshot]
    if args.host_pids:
        common += ["--host-pids"]
    if args.durable_every is not None:
        common += ["--durable-every", args.durable_every]
    kills = resumes = checkpoints = in_window = fresh = left_running = views_last = 0
    exit_after_kill = False
    final = None
    errors = []
    started = False
    backoff, last_epoch = 1.0, 0
    t0 = time.monotonic()
    out = open(os.path.join(work, "run.stdout"), "wb")
    while final is None and time.monotonic() < deadline:
        if not started:
            # a fresh start: nothing of an earlier attempt may remain
            out.seek(0)
            out.truncate()
            shutil.rmtree(run_dir)
            os.mkdir(run_dir)
            cmd = [sup, "run", "--fresh"] + common + ["--"] + prog
        else:
            cmd = [sup, "resume"] + common + (["--trust-files"] if args.host_pids else [])
        env = dict(os.environ, PROSPER_FAST_DIR=fast_dir)
        if args.power_cut:
            env["PROSPER_TEST_JOURNAL_DURABLE"] = "1"
        hook = kills < args.kills and kills % 2 == 1
        if hook:
            env["PROSPER_TEST_COMMIT_DELAY_US"] = str(COMMIT_DELAY_US)
        if os.path.exists(stats):
            os.unlink(stats)
        # a new file per attempt: stderr is this attempt's own, never the checkpointed stdio file
        errf = open(os.path.join(work, f"attempt-{kills + fresh}.stderr"), "w+b")
        p = subprocess.Popen(cmd, cwd=run_dir, stdout=out, stdin=subprocess.DEVNULL, stderr=errf,
                             env=env, start_new_session=True)
        if kills < args.kills:
            # Long enough to make progress on average, short enough to spread N kills over the run;
            # after an attempt that committed nothing new, the next one gets longer (backoff), so a
            # slow start (a big first checkpoint) cannot turn the whole run into fresh starts.
            hi = max(0.04, 1.2 * native_s / max(1, args.kills)) * backoff
            delay = rng.uniform((0.03 if not started else 0.005) * backoff, hi)
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                wait_group_gone(p.pid, max(0.0, deadline - time.monotonic()))
                kills += 1
                in_window += hook
                errf.close()
                if started:
                    resumes += 1
                if args.power_cut:
                    for f in _fast_pools(fast_dir):
                        os.unlink(f)
                    _journal_power_cut(pool + ".undo")
                # killed while the pool was being created: nothing to resume, a fresh start
                started = os.path.exists(pool)
                fresh += not started
                epoch = _progress(pool, fast_dir) if started else 0
                backoff = 1.0 if epoch > last_epoch else min(backoff * 1.5, 50.0)
                last_epoch = epoch
                continue
        else:
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                end_group(p.pid)
                errors.append("timed out")
                break
        left_running += end_group(p.pid)  # what the program left behind, as natively
        errf.seek(0)
        err = errf.read().decode(errors="replace")
        errf.close()
        if os.path.exists(stats):
            with open(stats) as f:
                st = json.load(f)
            checkpoints = st["epoch"]   # every epoch of the pool, over all attempts
            views_last = st.get("snapshot_views", 0)  # only the attempt that ended writes its statistics
        what, code = outcome(p.returncode, err) if started else ("exit", p.returncode)
        if what == "fresh":
            started = False          # killed before its first checkpoint: start again
            fresh += 1
            continue
        if what == "finished":
            final = code             # the last kill landed after the exit was recorded
            exit_after_kill = True
            break
        if started:
            resumes += 1
        refused = refusal(err) if p.returncode == 2 else None
        if refused:
            errors.append(f"{refused['refused']}: {refused['message']}")
            final = p.returncode
            break
        final = p.returncode
    out.close()
    supervised_s = time.monotonic() - t0

    differences = list(errors)
    if final is None and not errors:
        differences.append("did not finish in time")
    if final is not None and final != native.returncode:
        differences.append(f"exit code {final}, native {native.returncode}")
    with open(os.path.join(work, "native.stdout"), "rb") as a, open(os.path.join(work, "run.stdout"), "rb") as b:
        if a.read() != b.read():
            differences.append("stdout differs")
    fa, fb = _files(native_dir), _files(run_dir)
    for name in sorted(set(fa) | set(fb)):
        if fa.get(name) != fb.get(name):
            differences.append(f"file {name} differs")
    # a run that differed keeps what it left (attempts' stderr, outputs, the pool) for a look
    keep = args.keep or bool(differences)
    result = {
        "program": prog, "kills": kills, "resumes": resumes, "identical": not differences,
        "checkpoints": checkpoints, "kills_in_commit_window": in_window, "fresh_starts": fresh,
        "snapshot_views_last_attempt": views_last,
        "exit_found_after_kill": exit_after_kill,
        "left_running": {"native": left_native, "supervised": left_running},
        "native_seconds": round(native_s, 3), "supervised_seconds": round(supervised_s, 3),
        "differences": differences, "workdir": work if keep else None, "pool": pool if keep else None,
    }
    shutil.rmtree(fast_dir, ignore_errors=True)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
        # the pool, and what a kill during its creation left under a temporary name
        for name in os.listdir(pool_dir):
            if name == os.path.basename(pool) or name.startswith(f".{os.path.basename(pool)}.creating-"):
                os.unlink(os.path.join(pool_dir, name))
            elif name == os.path.basename(pool) + ".undo":  # its file-undo journal
                shutil.rmtree(os.path.join(pool_dir, name), ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{' '.join(prog)}: {kills} kills ({in_window} with the commit window widened), {resumes} resumes, "
              f"{checkpoints} checkpoints, {fresh} fresh starts")
        print("identical to the native run" if not differences else "DIFFERENT: " + "; ".join(differences))
        if keep:
            print(f"kept: {work} and the pool {pool}")
    return 0 if not differences else 1


if __name__ == "__main__":
    sys.exit(main(None))
