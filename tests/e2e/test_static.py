"""Statically linked programs -- Go's default build, `gcc -static`, Rust for musl -- have no loader
to preload the shim into; the supervisor gives each its gate, records and userfaultfd by injection
at its exec stop (src/supervisor/base/shimless.h).  Each program is built here, checked to be
static, and tortured: output and exit status identical to a native run.  A missing toolchain is a
skip with its reason; a toolchain that is there but fails is a failure."""
import json
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from conftest import BUILD, PROSPER, kill_at_epoch, prosper

LONG = bool(os.environ.get("PROSPER_LONG"))
KILLS = 60 if LONG else 30
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static_programs")
SUP = os.path.join(BUILD, "src", "supervisor", "prosper-supervise")


def torture(*prog, kills=KILLS, seed=1):
    r = prosper("torture", "--kills", kills, "--seed", seed, "--json", "--timeout", 400, "--", *prog, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def is_static(path):
    """No PT_INTERP: nothing to preload into (what `file` calls statically linked or static-pie)."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True, check=True).stdout
    return "INTERP" not in out


def go_tool():
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if not go:
        pytest.skip("no Go toolchain")
    return go


def build_go(tmp_path, name, cgo):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(os.path.join(HERE, name + ".go"), d / "main.go")
    (d / "go.mod").write_text(f"module {name}\n\ngo 1.21\n")
    env = dict(os.environ, GOCACHE=str(tmp_path / "gocache"), GOPATH=str(tmp_path / "gopath"), GOFLAGS="-mod=mod",
               GOTOOLCHAIN="local")
    if cgo is not None:
        env["CGO_ENABLED"] = cgo
    r = subprocess.run([go_tool(), "build", "-o", "prog", "."], cwd=d, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    prog = str(d / "prog")
    assert is_static(prog), "the build is not static: the test would not test what it says"
    return prog


def test_a_default_go_build_survives_kills(tmp_path):
    """Go's default build of a program that imports no cgo package: statically linked.  Goroutines
    on stacks in its heap, threads made by the runtime's own clone, each with its own signal stack,
    preempted by signals; a channel pipeline, a map and the garbage collector."""
    prog = build_go(tmp_path, "gopipeline", None)
    res = torture(prog, "2000000")
    assert res["identical"], res["differences"]
    assert res["resumes"] >= KILLS // 2, res


@pytest.mark.parametrize("listener", ["tcp", "mptcp"])
def test_a_static_go_http_server_queried_by_itself_survives_kills(tmp_path, listener):
    """The same runtime with net/http (CGO_ENABLED=0: net links libc through cgo otherwise): a
    listener (plain, or MPTCP as Go's ListenConfig makes it), epoll, a new connection per request,
    all kept across kills."""
    prog = build_go(tmp_path, "gohttp", "0")
    res = torture(prog, "6000", *(["mptcp"] if listener == "mptcp" else []), seed=2)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= KILLS // 2, res


def build_static_c(tmp_path):
    prog = str(tmp_path / "threads_timer")
    r = subprocess.run(["gcc", "-O1", "-static", "-pthread", "-o", prog, os.path.join(HERE, "threads_timer.c")],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "cannot find -lc" in r.stderr:
        pytest.skip("no static C library (libc6-dev's libc.a)")
    assert r.returncode == 0, r.stderr
    assert is_static(prog)
    return prog


def test_a_gcc_static_program_with_threads_a_handler_and_a_timer_survives_kills(tmp_path):
    """glibc linked in: threads joined every round (a thread made again must be cleared from its
    descriptor at its exit, or pthread_join waits for ever), a SIGALRM handler and an interval
    timer, both read by the injected blob at each checkpoint and still there at the end."""
    prog = build_static_c(tmp_path)
    res = torture(prog, "20", seed=3)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= KILLS // 2, res
    native = subprocess.run([prog, "2"], capture_output=True, text=True, timeout=60).stdout
    assert "ticks>0 1 interval 20000 handler-kept 1" in native  # what identical output then carries


@pytest.mark.parametrize("link", ["static", "dynamic"])
def test_a_periodic_timer_whose_signal_waits_blocked_survives_kills(tmp_path, link):
    """A periodic ITIMER_REAL with SIGALRM blocked reads as no time left from its first expiry
    until the signal is taken (the kernel rearms it only then): a resume must arm it again, to
    fire at once, or the program's sigwait for its ticks waits for ever.  Both paths: the blob
    injected into a static program, the shim's records in a dynamic one."""
    prog = str(tmp_path / "blocked_timer")
    r = subprocess.run(["gcc", "-O1", *(["-static"] if link == "static" else []), "-o", prog,
                        os.path.join(HERE, "blocked_timer.c")], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "cannot find -lc" in r.stderr:
        pytest.skip("no static C library (libc6-dev's libc.a)")
    assert r.returncode == 0, r.stderr
    assert is_static(prog) == (link == "static")
    res = prosper("torture", "--kills", 10, "--seed", 4, "--json", "--timeout", 30, "--", prog, "30", timeout=600)
    assert res.returncode in (0, 1), res.stderr
    res = json.loads(res.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 5, res


def test_a_rust_musl_program_survives_kills(tmp_path):
    """Rust for x86_64-unknown-linux-musl (static-pie: loaded just above the vdso, so the area goes
    below that): std threads over musl, whose pthread_join waits on one lock the kernel clears at
    each thread's exit -- a thread made again without it left the resumed program waiting."""
    rustc = shutil.which("rustc") or os.path.expanduser("~/.cargo/bin/rustc")
    if not os.access(rustc, os.X_OK):
        pytest.skip("no Rust toolchain")
    rustup = shutil.which("rustup") or os.path.expanduser("~/.cargo/bin/rustup")
    installed = subprocess.run([rustup, "target", "list", "--installed"], capture_output=True, text=True).stdout
    if "x86_64-unknown-linux-musl" not in installed:
        add = subprocess.run([rustup, "target", "add", "x86_64-unknown-linux-musl"], capture_output=True, text=True,
                             timeout=600)
        if add.returncode != 0:
            pytest.skip("the musl target does not install here: " + add.stderr[-200:])
    prog = str(tmp_path / "rustprog")
    r = subprocess.run([rustc, "-O", "--target", "x86_64-unknown-linux-musl", "-o", prog,
                        os.path.join(HERE, "rustprog.rs")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert is_static(prog)
    res = torture(prog, "2000000", seed=5)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= KILLS // 2, res


LOOP = """#!/usr/bin/env sh
i=0
while [ $i -lt 30 ]; do
  "$1" 1 | head -n 1 | sed "s/^/$i /"
  i=$((i+1))
done
echo done
"""


def test_a_script_running_a_static_program_every_round_is_checkpointed_across_the_execs(tmp_path):
    """A shell loop runs the static program once a round (a child that execs it, through a pipe):
    each exec is followed, checkpoints go on through all of them, and kills anywhere resume."""
    prog = build_static_c(tmp_path)
    script = tmp_path / "loop.sh"
    script.write_text(LOOP)
    script.chmod(0o755)
    stats = tmp_path / "s.json"
    work = tmp_path / "w"
    work.mkdir()
    r = subprocess.run([SUP, "run", "--stats-json", str(stats), "--", str(script), prog], cwd=work,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.endswith("done\n"), r.stderr
    st = json.loads(stats.read_text())
    assert st["disabled"] is None, st["disabled"]
    assert st["execs_followed"] >= 30 and st["checkpoints"] >= 30, st
    res = torture(str(script), prog, kills=20, seed=4)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 10, res


def test_an_ordinary_user_checkpoints_a_static_program(tmp_path):
    """`nobody`, no capabilities: the injected userfaultfd is one of user mode only (the resume
    fills memory before the program runs), the rest as for root."""
    prog = build_static_c(tmp_path)
    d = tempfile.mkdtemp(prefix="prosper-nobody-")
    try:
        u = pwd.getpwnam("nobody")
        os.chown(d, u.pw_uid, u.pw_gid)
        shutil.copy(prog, os.path.join(d, "threads_timer"))
        os.chmod(os.path.join(d, "threads_timer"), 0o755)
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", PROSPER, "torture", "--kills", "8", "--seed", "2", "--timeout", "240",
                            "--json", "--", os.path.join(d, "threads_timer"), "20"], cwd=d, capture_output=True,
                           text=True, timeout=900)
        assert r.returncode in (0, 1) and r.stdout.strip(), r.stderr[-3000:]
        res = json.loads(r.stdout)
        assert res["identical"], res["differences"]
        assert res["resumes"] >= 4, res
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_static_go_program_profiling_itself_gets_its_per_thread_timers_back(tmp_path):
    """CPU profiling gives each runtime thread a POSIX timer of its own (SIGEV_THREAD_ID): read at
    each checkpoint through the injected gate and made again, each for its thread, at a resume."""
    prog = build_go(tmp_path, "goprofile", None)
    native = subprocess.run([prog, "900000000"], capture_output=True, text=True, timeout=120)
    assert native.returncode == 0, native.stderr
    pool, stats = str(tmp_path / "p.prosper"), str(tmp_path / "s.json")
    p = subprocess.Popen([SUP, "run", "--pool", pool, "--", prog, "900000000"], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    kill_at_epoch(p, pool, 40)
    r = subprocess.run([SUP, "resume", "--pool", pool, "--stats-json", stats], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and r.stdout == native.stdout, r.stderr
    st = json.loads(open(stats).read())
    assert st["posix_timers_restored"] >= 2 and st["timers_restored"] >= 1, st


BUSYBOX_SCRIPT = """i=0
while [ $i -lt 4000 ]; do echo "line $i $((i*i % 997))"; i=$((i+1)); done | busybox sort -t' ' -k3n | busybox md5sum
busybox seq 1 400000 | busybox awk '{s+=$1*$1} END {print s}'
"""


def test_busybox_static_shell_with_pipelines_survives_kills(tmp_path):
    """A real static program we did not write: Debian's busybox-static, its shell forking its own
    applets into pipelines (sort, md5sum, seq, awk), every process of the tree without a shim."""
    bb = shutil.which("busybox")
    if not bb or not is_static(os.path.realpath(bb)):
        pytest.skip("busybox-static is not installed (apt-get install busybox-static)")
    script = tmp_path / "pipes.sh"
    script.write_text(BUSYBOX_SCRIPT)
    res = torture(bb, "sh", str(script), kills=15, seed=9)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 5, res
