"""Where the project and its built tools are: the one place that derives them (PROSPER_ROOT and
PROSPER_BUILD override), and helpers to run the tools with exit codes passed through."""
import os
import shutil
import subprocess
import sys

ROOT = os.environ.get("PROSPER_ROOT") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PROSPER_BUILD") or os.path.join(ROOT, "build")
PROSPER = os.path.join(ROOT, "bin", "prosper")   # the front end, for subcommands run as processes
RESULTS = os.path.join(ROOT, "bench", "results")


def python():
    """python -- the project's interpreter (its virtualenv), for Python parts run as processes."""
    venv = os.path.join(ROOT, ".venv", "bin", "python")
    return venv if os.access(venv, os.X_OK) else sys.executable


def bench_program(name):
    """bench_program -- the path of a built program of bench/ (it may not be built yet)."""
    return os.path.join(BUILD, "bench", name)


def die(msg, code=2):
    """die -- a user error: one line on stderr, exit code 2 (docs/cli.md)."""
    print(f"prosper: {msg}", file=sys.stderr)
    sys.exit(code)


def tool(relpath):
    """tool -- absolute path of a built binary, or a clear error if the build is missing."""
    path = os.path.join(BUILD, relpath)
    if not os.access(path, os.X_OK):
        die(f"{relpath} is not built (run `make build` in {ROOT})")
    return path


def exec_tool(relpath, argv):
    """exec_tool -- replace this process by a C tool; its exit code is ours."""
    path = tool(relpath)
    os.execv(path, [path] + list(argv))


def run_tool(relpath, argv, **kw):
    return subprocess.run([tool(relpath)] + list(argv), **kw)


def program_command(command, who, usage):
    """program_command -- the `-- PROGRAM [ARGS]` of a subcommand: the argument list with the program
    found on PATH when it names no directory; a missing program is a usage error (exit 2)."""
    cmd = list(command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        die(f"{who}: no program given (usage: {usage})")
    prog = shutil.which(cmd[0]) if os.sep not in cmd[0] else cmd[0]
    if not prog or not os.path.isfile(prog) or not os.access(prog, os.X_OK):
        die(f"{who}: {cmd[0]}: no such executable")
    return prog, cmd
