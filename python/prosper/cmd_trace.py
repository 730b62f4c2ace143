"""prosper trace --out FILE [--level N] -- PROGRAM [ARGS...]

Record every load and store of an unmodified program (and its stack's bounds) as a Prosper
trace (docs/trace-format.md): the Valgrind tool of `prosper hw` writes the uncompressed records
into a pipe and zstd compresses them into FILE.  `prosper sim FILE` replays it.

The recording follows only the process started (not its children).  The program's exit code is
returned; the tool's own report goes to stderr."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from . import valgrind
from .paths import die, program_command

EXAMPLE = "prosper trace --out /tmp/t.trace -- build/bench/recursive 8"  # shown by --help


def add_arguments(p):
    p.add_argument("--out", required=True, help="the trace file to write (zstd-compressed)")
    p.add_argument("--level", type=int, default=3, help="zstd compression level (default 3)")
    p.add_argument("--hw-json", help="also keep the tool's `prosper hw` totals (8-byte granules) as JSON here")
    p.add_argument("--json", action="store_true",
                   help="one JSON object on stdout (trace, bytes, exit_code, hw_json); the program's "
                        "stdout then goes to stderr")
    p.add_argument("command", nargs="*", metavar="-- PROGRAM [ARGS]", help="the program to trace")


def main(args):
    prog, cmd = program_command(args.command, "trace", "prosper trace --out FILE -- PROGRAM [ARGS]")
    valgrind.require_tool("trace")
    if not shutil.which("zstd"):
        die("trace: the zstd program is missing (scripts/setup installs it)")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        die(f"trace: {out_dir}: no such directory")
    with tempfile.TemporaryDirectory(prefix="prosper-trace-") as tmp:
        fifo = os.path.join(tmp, "records")
        os.mkfifo(fifo)
        partial = args.out + ".partial"
        with open(partial, "wb") as sink:
            # zstd opens the pipe's read end first, so the tool's open for writing never blocks.
            z = subprocess.Popen(["zstd", "-q", f"-{args.level}", "-T0", "-c", fifo], stdout=sink)
            vg, env = valgrind.command(prog, cmd[1:], f"{tmp}/valgrind.log", [
                "--gran=8", f"--trace-out={fifo}"] + ([f"--json-out={args.hw_json}"] if args.hw_json else []))
            p = subprocess.run(vg, env=env, stdout=sys.stderr if args.json else None)
            if z.wait() != 0:
                os.unlink(partial)
                print("prosper trace: zstd failed", file=sys.stderr)
                return 1
        log = open(os.path.join(tmp, "valgrind.log")).read() if os.path.exists(os.path.join(tmp, "valgrind.log")) else ""
        if "prosper: " not in log:  # the tool never finished (it prints its summary at exit)
            os.unlink(partial)
            last = log.strip().splitlines()[-1] if log.strip() else "valgrind failed"
            print(f"prosper trace: no trace recorded: {last}", file=sys.stderr)
            return 1
        os.replace(partial, args.out)
    print(f"prosper trace: {args.out} ({os.path.getsize(args.out)} bytes)", file=sys.stderr)
    if args.json:
        print(json.dumps({"trace": args.out, "bytes": os.path.getsize(args.out), "exit_code": p.returncode,
                          "hw_json": args.hw_json}))
    return p.returncode
