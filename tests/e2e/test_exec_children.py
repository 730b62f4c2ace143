"""Programs as people start them: through `#!/usr/bin/env` scripts, `env VAR=x`, an interpreter
shim on PATH that runs `$(...)` and then execs the real interpreter, a shell script doing its own
work, a program that runs short child processes between phases of work.  Each is killed at
random instants and resumed, and must end exactly as a native run; `resumes` counts only
resumes of a committed checkpoint, so a program whose exec was not followed (every attempt a
fresh start) fails these tests.  Plus: what the program's environment looks like, and the
one-line reason when an exec cannot be followed."""
import json
import os
import subprocess

import pytest

import programs
from conftest import PROSPER, prosper

LONG = os.environ.get("PROSPER_LONG") == "1"
KILLS = 60 if LONG else 30
PATH = "/usr/bin:/bin"


def torture(tmp_path, *prog, kills=KILLS, path=PATH):
    env = dict(os.environ, PATH=path)
    # a resume that hangs fails in minutes, not at torture's default of ten
    r = subprocess.run([PROSPER, "torture", "--kills", str(kills), "--timeout", "240", "--json", "--", *prog],
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode in (0, 1), r.stderr
    res = json.loads(r.stdout)
    assert res["identical"], (res["differences"], res["workdir"], res["pool"])
    # most kills land after a checkpoint of the exec'd image and are resumed from it
    assert res["resumes"] >= kills // 2, res
    return res


def test_env_shebang_python_script(tmp_path):
    torture(tmp_path, *programs.env_python_script(tmp_path))


def test_env_with_a_variable(tmp_path):
    torture(tmp_path, *programs.env_with_variable(tmp_path))


def test_env_dash_i_drops_the_environment(tmp_path):
    """`env -i` passes no environment at all: the shim is given to the new image all the same."""
    torture(tmp_path, *programs.env_dash_i(tmp_path), kills=20)


def test_shell_script_doing_its_own_work(tmp_path):
    torture(tmp_path, *programs.env_sh_script(tmp_path))


def test_interpreter_found_through_a_shim_on_path(tmp_path):
    """A pyenv-style shim: a bash script that computes the interpreter in a subshell ($(...)
    forks a child) and then execs it; reached through `#!/usr/bin/env python3` on PATH."""
    prog, path = programs.pyenv_shim(tmp_path, PATH)
    torture(tmp_path, *prog, path=path)


def test_launcher_script_that_execs(tmp_path):
    torture(tmp_path, *programs.launcher(tmp_path))


def test_children_between_phases_of_work(tmp_path, pool_dir):
    """subprocess.run (pipes to a shell that sleeps, then prints) and os.system between phases.
    With the program's own pid namespace the children are checkpointed with it (the cut holds
    every process); with --host-pids checkpoints wait while a child lives, and go on between."""
    prog = programs.phases(tmp_path)[0]
    torture(tmp_path, prog)
    # the statistics of runs that were not killed, in both modes
    pool, stats = os.path.join(pool_dir, "p.prosper"), os.path.join(pool_dir, "s.json")
    for mode in ([], ["--host-pids"]):
        # at the fixed cadence: the counts below are of checkpoints every 10 ms
        r = subprocess.run([PROSPER, "run", "--fresh", "--max-overhead", "0", "--pool", pool, "--stats-json", stats,
                            *mode, "--", prog],
                           capture_output=True, text=True, env=dict(os.environ, PATH=PATH), timeout=300)
        assert r.returncode == 0, r.stderr
        with open(stats) as f:
            st = json.load(f)
        if mode:
            assert r.stderr.count("started a child process") == 1, r.stderr
            assert st["waited_for_children"] >= 8 and st["tree_checkpoints"] == 0, st
        else:
            assert "started a child process" not in r.stderr, r.stderr
            assert st["tree_checkpoints"] >= 1 and st["max_processes"] >= 2, st
        assert st["execs_followed"] >= 1 and st["epoch"] >= 10, st


def test_the_program_sees_the_users_environment(tmp_path, pool_dir):
    """Nothing the supervisor adds is visible to the program or its children, in the first image
    or an exec'd one; the user's own LD_PRELOAD/GLIBC_TUNABLES values stay."""
    env = dict(os.environ, PATH=PATH, GLIBC_TUNABLES="glibc.malloc.arena_max=2", MARK="1")
    for prog in (["/usr/bin/env"], ["/bin/sh", "-c", "exec /usr/bin/env"], ["/bin/sh", "-c", "/usr/bin/env; true"]):
        native = subprocess.run(prog, capture_output=True, text=True, env=env).stdout
        r = subprocess.run([PROSPER, "run", "--pool", os.path.join(pool_dir, "e.prosper"), "--fresh", "--", *prog],
                           capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        # `_` is the last command of the shell that started it: bin/prosper's bash changes it
        ours = sorted(l for l in r.stdout.splitlines() if not l.startswith("_="))
        assert ours == sorted(l for l in native.splitlines() if not l.startswith("_=")), prog
        assert "GLIBC_TUNABLES=glibc.malloc.arena_max=2" in r.stdout.splitlines()


def test_an_exec_that_cannot_be_followed_is_named(tmp_path, pool_dir):
    """An image that cannot be followed -- here a program exec'd with a 100 KB environment, more
    than the room below its initial stack for a copy with the shim's variables (exec.c) -- gets
    one line naming it, and the program runs on to its end with its own output and exit code.
    Its stdout closed at its end once injected a call at the old image's gate, in the new image: a
    SIGSEGV (exit 139) where it exits 0.  (A statically linked program is followed: test_static.py.)"""
    argv = ["/bin/sh", "-c", 'exec /usr/bin/env BIG="$1" /bin/echo done', "sh", "x" * 100000]
    native = subprocess.run(argv, capture_output=True, text=True)
    r = prosper("run", "--pool", os.path.join(pool_dir, "s.prosper"), "--", *argv, timeout=60)
    assert r.returncode == native.returncode == 0 and r.stdout == native.stdout
    lines = [l for l in r.stderr.splitlines() if "which cannot be followed" in l]
    assert len(lines) == 1 and "/bin/echo" in lines[0] and "too large" in lines[0], r.stderr


def test_a_shell_loop_over_a_compressor(tmp_path):
    """The work is done by the children (gzip, exec'd from dash's vfork after dash itself
    redirected its stdout to the .gz file): the shell and its gzip are checkpointed together,
    and a resume reopens the .gz at its checkpointed size -- the result is exact."""
    sh = programs.compress_loop(tmp_path)[0]
    r = subprocess.run([PROSPER, "torture", "--kills", str(KILLS), "--timeout", "240", "--json", "--", sh], capture_output=True,
                       text=True, timeout=900, env=dict(os.environ, PATH=PATH))
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 3 and res["checkpoints"] >= 3, res


def test_a_shell_loop_that_runs_a_program_every_round(tmp_path):
    """A checkpoint is due while the shell waits in vfork for its child's exec, or while an exec'd
    image is still in its loader: the cut waits for the exec and takes the new image with it.
    (It used to be given up at every exec, and each exec moved the next one a full interval
    away: a program that exec'd more often than every 10 ms got no checkpoint at all.)"""
    prog = programs.exec_loop(tmp_path)
    res = torture(tmp_path, *prog, kills=20)
    assert res["checkpoints"] >= 20, res
    # a run that is not killed warns of nothing: not of the userfaultfd each new image's shim
    # holds for a moment after its hello, which a cut joining the exec can see
    r = subprocess.run([PROSPER, "run", "--fresh", "--pool", str(tmp_path / "quiet.prosper"), "--", *prog],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, PATH=PATH), cwd=tmp_path)
    assert r.returncode == 0 and "not persisted" not in r.stderr, r.stderr


def test_a_precopy_pass_racing_execs_leaves_checkpointing_on(tmp_path):
    """--copy precopy with a shell that runs a program every few ms: a pass can meet a process
    that has just executed another program (its tracker and map are the old image's); that costs
    a whole copy at the stop, never checkpointing.  The oracle checks every cut."""
    prog = programs.exec_loop(tmp_path)
    native = subprocess.run(prog, capture_output=True, text=True, timeout=300, env=dict(os.environ, PATH=PATH),
                            cwd=tmp_path)
    stats = tmp_path / "s.json"
    r = subprocess.run([PROSPER, "run", "--fresh", "--copy", "precopy", "--verify", "--interval", "2", "--pool",
                        str(tmp_path / "p.prosper"), "--stats-json", str(stats), "--", *prog],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, PATH=PATH), cwd=tmp_path)
    assert r.returncode == native.returncode and r.stdout == native.stdout, r.stderr
    st = json.loads(stats.read_text())
    assert st["disabled"] is None and st["mismatches"] == 0, r.stderr
    assert st["execs_followed"] >= 100 and st["precopies"] >= 20 and st["checkpoints"] >= 20, st


def test_three_stage_pipelines(tmp_path):
    """Three times: the shell counts on its own, then a generator | a filter | a compressor into
    a file -- all of its processes are in each cut, with the bytes in flight in the pipes."""
    sh = programs.pipeline(tmp_path)[0]
    r = subprocess.run([PROSPER, "torture", "--kills", "20", "--timeout", "240", "--json", "--", sh], capture_output=True,
                       text=True, timeout=900, env=dict(os.environ, PATH=PATH))
    res = json.loads(r.stdout)
    assert res["identical"], res["differences"]
    assert res["resumes"] >= 3, res


def test_a_pipe_of_the_programs_own_survives(tmp_path):
    """A self-pipe (both ends kept, O_NONBLOCK on the read end): resume makes it again at the same
    numbers with the same flags; a pipe closed at resume would end in EBADF."""
    torture(tmp_path, *programs.selfpipe(tmp_path))
