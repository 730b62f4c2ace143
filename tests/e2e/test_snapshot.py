"""Large checkpoints read from a copy-on-write view forked at the stop (src/supervisor/memory/
snapshot.h; docs/run-resume.md "Large programs: copy-on-write views"): the program goes on while
the commit reads the view, and every kind of program -- threads, trees of processes, NVM memory,
memory a fork does not copy -- survives kills with views forced on (--snapshot fork) as it does
without them."""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import BUILD, PROSPER, prosper

SCALE = os.path.join(BUILD, "bench", "scale")
PR_MT = os.path.join(BUILD, "bench", "pr_mt")
THREADCHECK = os.path.join(BUILD, "tests", "supervisor", "threadcheck")
NVMUSER = os.path.join(BUILD, "tests", "supervisor", "nvmuser")
LONG = os.environ.get("PROSPER_LONG") == "1"


def run(tmp_path, pool_dir, *options, prog):
    """prosper run OPTIONS -- PROG: (the completed process, its statistics).  At the fixed cadence
    unless OPTIONS say otherwise: views are what is tested, at every cut a dense writer takes."""
    stats = tmp_path / "stats.json"
    cadence = [] if "--max-overhead" in options else ["--max-overhead", "0"]
    r = subprocess.run([PROSPER, "run", "--fresh", "--pool", os.path.join(pool_dir, "s.prosper"),
                        "--stats-json", str(stats), *cadence, *options, "--", *prog],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return r, json.loads(stats.read_text())


def native(*prog):
    return subprocess.run(list(prog), capture_output=True, text=True, timeout=600, check=True).stdout


def torture(*prog, kills, extra=()):
    r = prosper("torture", "--kills", kills, "--json", "--snapshot", "fork", *extra, "--", *prog, timeout=1200)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= kills // 2, res
    return res


def test_a_large_dense_writer_is_read_from_views_and_its_stops_are_the_forks(tmp_path, pool_dir):
    """256 MiB written all over between checkpoints: with --snapshot fork each cut's bytes are read
    from a view after the stop, none in it; the output is the native one."""
    prog = [SCALE, "256", "6000000"]
    r, st = run(tmp_path, pool_dir, "--snapshot", "fork", prog=prog)
    assert r.stdout == native(*prog)
    assert st["disabled"] is None and st["checkpoints"] >= 2, st
    assert st["snapshot_views"] >= 2 and st["snapshot_bytes"] >= 64 << 20, st
    # the first cut reads every mapping; after it, what the stops copied is what the views did not
    # hold (stacks are staged too, and read from the view like the rest)
    assert st["snapshot_fork_max_ms"] > 0 and st["snapshot_failed"] == 0 and st["snapshot_forbidden"] == 0, st


# Touches memory for SECONDS, a pause of 2 ms between rounds: "fresh" maps 1 MiB of new memory a round (each page's
# first touch a fault, no page shared with a view), "rewrite" writes one byte into every page of
# the same 32 MiB again and again (each page copied once a view shares it).  Prints the pages.
TOUCHER = """
import mmap, sys, time
mode, seconds = sys.argv[1], float(sys.argv[2])
chunk, keep, pages = 1 << 20, [], 0
private = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS  # mmap's default is shared: a fork would not copy it
old = mmap.mmap(-1, 32 << 20, flags=private)
old[::4096] = b"x" * ((32 << 20) // 4096)
end, k = time.monotonic() + seconds, 0
while time.monotonic() < end:
    k += 1
    if mode == "fresh":
        m = mmap.mmap(-1, chunk, flags=private)
        m[::4096] = bytes([k & 255]) * (chunk // 4096)
        keep.append(m)
        pages += chunk // 4096
    else:
        old[::4096] = bytes([k & 255]) * ((32 << 20) // 4096)
        pages += (32 << 20) // 4096
    time.sleep(0.002)
print(mode, pages > 0)
"""


@pytest.mark.parametrize("mode", ["fresh", "rewrite"])
def test_a_views_copies_are_counted_apart_from_the_first_touches_of_new_memory(tmp_path, pool_dir, mode):
    """While a view lives, the program's write to a page it shares with the view is a copy; a first
    touch of new memory is a fault too but no copy (snapshot_drop counts the resident pages the
    program gained).  With a view at every cut, each living 100 ms (a test hook slows its commit),
    a program that only maps new memory shows few copies; one that rewrites its memory, many."""
    env = dict(os.environ, PROSPER_TEST_COMMIT_DELAY_US="100000")
    stats = tmp_path / "stats.json"
    prog = ["/usr/bin/python3", "-S", "-c", TOUCHER, mode, "1.5"]
    r = subprocess.run([PROSPER, "run", "--fresh", "--pool", os.path.join(pool_dir, "s.prosper"), "--stats-json",
                        str(stats), "--max-overhead", "0", "--snapshot", "fork", "--", *prog],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert r.returncode == 0 and r.stdout == f"{mode} True\n", r.stderr
    st = json.loads(stats.read_text())
    assert st["snapshot_views"] >= 3, json.dumps(st)
    if mode == "fresh":
        # tens of thousands of pages first touched while views lived (counted as copies before: 85048
        # in 4 views of a run that mapped 4 MiB a round); the copies are
        # the interpreter's own pages it writes (its heap, its stack): a few hundred a view
        assert st["snapshot_cow_faults"] <= 2000 * st["snapshot_views"], json.dumps(st)
    else:
        # 8192 pages rewritten every few milliseconds: each view's first 8192 writes are copies
        assert st["snapshot_cow_faults"] >= 4096 * st["snapshot_views"], json.dumps(st)


def test_auto_forks_for_a_long_stop_and_copies_a_short_one(tmp_path, pool_dir):
    """--snapshot auto: a view when the stop's copy would last over 50 ms and more than twice the
    fork, both priced from the run's own measurements; a small program's cuts are copied.  It is
    the default; copy never forks."""
    big = [SCALE, "512", "6000000"]
    r, st = run(tmp_path, pool_dir, "--snapshot", "auto", prog=big)
    assert r.stdout == native(*big)
    assert st["snapshot"] == "auto" and st["snapshot_views"] >= 1, st
    small = [os.path.join(BUILD, "bench", "quicksort"), "50"]
    r, st = run(tmp_path, pool_dir, "--snapshot", "auto", prog=small)
    assert r.stdout == native(*small)
    assert st["checkpoints"] >= 3 and st["snapshot_views"] == 0, st
    if os.environ.get("PROSPER_SNAPSHOT") is None:
        r, st = run(tmp_path, pool_dir, prog=big)
        assert st["snapshot"] == "auto", st
    r, st = run(tmp_path, pool_dir, "--snapshot", "copy", prog=big)
    assert r.stdout == native(*big)
    assert st["snapshot"] == "copy" and st["snapshot_views"] == 0 and st["snapshot_declined"] == 0, st


def test_the_commit_under_way_when_the_program_finishes_is_given_up(tmp_path, pool_dir):
    """A view's commit of GiBs takes seconds; the program that ends meanwhile leaves nothing to
    resume, so the commit is given up instead of waited for (loop.c), and the pool -- its writes
    uncommitted, opened again as after a crash in that commit -- is marked finished at the last
    epoch committed.  Each commit is slowed by a test hook (1 s), so the program always ends in
    one."""
    # 4.5-6 s natively on a quiet machine (1.5-2 s for the 60 M operations this test once ran, and CI
    # saw the program end inside its first commit): commits of 1 s each are done before the one given up
    prog = [SCALE, "128", "180000000"]
    pool = os.path.join(pool_dir, "s.prosper")
    stats = tmp_path / "stats.json"
    env = dict(os.environ, PROSPER_TEST_COMMIT_DELAY_US="1000000")
    r = subprocess.run([PROSPER, "run", "--fresh", "--pool", pool, "--stats-json", str(stats), "--max-overhead", "0",
                        "--snapshot", "fork", "--", *prog], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == native(*prog)
    st = json.loads(stats.read_text())
    assert st["last_commit_given_up"] == 1 and st["snapshot_views"] >= 1 and st["checkpoints"] >= 1, st
    info = json.loads(prosper("inspect", "--json", pool).stdout)
    assert info["epoch"] == st["checkpoints"] + 1, (info["epoch"], st)  # the given-up commit is not in it
    again = prosper("resume", "--pool", pool)
    assert again.returncode == 2 and "the program finished (exit code 0)" in again.stderr, again.stderr


ADVISED = textwrap.dedent(r"""
    /* a dense writer with 1 MiB advised MADV_WIPEONFORK ("wipe") or MADV_DONTFORK ("dont") */
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include <sys/mman.h>
    int main(int argc, char **argv)
    {
        size_t n = (size_t)atoi(argv[1]) << 20, m = 1 << 20;
        long passes = atol(argv[3]);
        unsigned char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        unsigned char *q = mmap(0, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (madvise(q, m, !strcmp(argv[2], "wipe") ? MADV_WIPEONFORK : MADV_DONTFORK)) {
            perror("madvise");
            return 1;
        }
        for (long k = 0; k < passes; k++) {
            for (size_t i = 0; i < n; i += 4096)
                p[i] = (unsigned char)(p[i] * 7 + k);
            for (size_t i = 0; i < m; i += 64)
                q[i] = (unsigned char)(q[i] * 3 + k + 1);
        }
        unsigned long sum = 0;
        for (size_t i = 0; i < n; i += 4096)
            sum = sum * 31 + p[i];
        for (size_t i = 0; i < m; i += 64)
            sum = sum * 31 + q[i];
        printf("%lx\n", sum);
        return 0;
    }
    """)


@pytest.mark.parametrize("advice", ["wipe", "dont"])
def test_memory_a_fork_does_not_copy_is_never_read_from_a_view(tmp_path, pool_dir, advice):
    """A view would hold zeros for MADV_WIPEONFORK memory and nothing for MADV_DONTFORK: the filter
    sees the advice, the process gets no view from then on, its checkpoints are copied, and it
    survives kills with views forced on."""
    src = tmp_path / "advised.c"
    src.write_text(ADVISED)
    exe = str(tmp_path / "advised")
    subprocess.run(["cc", "-O2", "-o", exe, str(src)], check=True)
    prog = [exe, "128", advice, "800"]
    r, st = run(tmp_path, pool_dir, "--snapshot", "fork", prog=prog)
    assert r.stdout == native(*prog)
    assert st["snapshot_forbidden"] == 1 and st["snapshot_views"] == 0 and st["checkpoints"] >= 3, st
    torture(*prog, kills=4)


def test_threads_every_checkpoint_read_from_a_view_equals_live_memory(tmp_path, pool_dir):
    """The soundness oracle with threads writing each other's stacks, every cut read from a view:
    what the commit wrote from the view equals the stopped program's memory."""
    r, st = run(tmp_path, pool_dir, "--verify", "--interval", "2", "--snapshot", "fork", prog=[THREADCHECK, "150"])
    assert r.stdout == native(THREADCHECK, "150")
    assert st["disabled"] is None and st["checkpoints"] >= 10 and st["mean_threads"] > 1, st
    assert st["snapshot_views"] >= 10 and st["mismatches"] == 0 and st["verified_bytes"] > 0, st


def test_threads_survive_kills_with_views_forced(tmp_path):
    torture(PR_MT, "18", "3", kills=20 if LONG else 8)


TREE = textwrap.dedent(r"""
    import hashlib, os, sys
    def churn(tag, mib, rounds):
        b = bytearray(mib << 20)
        for r in range(rounds):
            for i in range(0, len(b), 4096):
                b[i] = (b[i] + r + i // 4096) & 255
        return tag + " " + hashlib.sha256(b).hexdigest()[:16]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, (churn("child", 24, 300) + "\n").encode())
        os._exit(0)
    os.close(w)
    mine = churn("parent", 48, 300)
    theirs = os.read(r, 100).decode()
    os.waitpid(pid, 0)
    print(mine)
    print(theirs, end="")
    """)


def test_a_tree_of_processes_survives_kills_with_views_forced(tmp_path):
    """The first process (the supervisor's child) is read from views, its child -- whose view would
    be the program's child -- is copied in the stop; the cut stays one."""
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    torture("/usr/bin/python3", "-S", str(script), kills=12 if LONG else 6)


def test_nvm_memory_survives_kills_with_views_forced(tmp_path):
    """NVM-resident memory is shared with the pool, never in a view: it is kept as without one."""
    torture(NVMUSER, "mixed", "2", "2000", kills=12 if LONG else 6, extra=["--seed", "3"])
