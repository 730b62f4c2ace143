"""prosper hw [OPTIONS] -- PROGRAM [ARGS...]

Run an unmodified program under the Valgrind tool "prosper", which emulates the Prosper
hardware dirty tracker (a 16-entry lookup table with HWM/LWM and a bitmap in memory) on every
store, and runs Prosper's OS component for the main thread's stack every --interval-instr guest
instructions (30 M ~ 10 ms at 3 GHz, as in the paper): flush, SP-aware bitmap inspection, and
the two-step copy into a shadow persistent stack.  Several granularities and table
configurations run side by side in one execution; Dirtybit (4 KiB pages, from the SP page up)
and the exact minimum (8-byte words whose value changed) are measured on the same stores.

Per-checkpoint averages exclude the first checkpoint (a full copy of the active stack).
A soundness oracle compares each shadow stack with the live stack after every checkpoint;
soundness_mismatches must be 0.  With --json the program's own stdout goes to stderr so that
stdout carries one JSON object.  The exit code is the program's."""
import json
import os
import subprocess
import sys
import tempfile

from . import valgrind
from .paths import die, program_command

EXAMPLE = "prosper hw --gran 8,64 -- build/bench/recursive 8"  # shown by --help


def add_arguments(p):
    p.add_argument("--gran", default="8,16,32,64,128", help="granularities in bytes (default 8,16,32,64,128)")
    p.add_argument("--table", default="16", help="lookup-table entries; a list makes several configurations")
    p.add_argument("--hwm", default="24", help="high-water mark(s) (default 24)")
    p.add_argument("--lwm", default="8", help="low-water mark(s) (default 8)")
    p.add_argument("--interval-instr", type=int, default=30_000_000,
                   help="guest instructions per checkpoint interval (default 30000000)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.add_argument("command", nargs="*", metavar="-- PROGRAM [ARGS]", help="the program to run")


def _ints(text, name, lo, hi):
    try:
        vals = [int(x) for x in text.split(",") if x != ""]
    except ValueError:
        die(f"hw: --{name} takes a comma-separated list of numbers")
    if not vals or any(v < lo or v > hi for v in vals):
        die(f"hw: --{name} values must be in {lo}..{hi}")
    return vals


def table_configs(args):
    t, h, l = _ints(args.table, "table", 1, 64), _ints(args.hwm, "hwm", 1, 32), _ints(args.lwm, "lwm", 0, 32)
    n = max(len(t), len(h), len(l))
    if any(len(x) not in (1, n) for x in (t, h, l)):
        die("hw: --table, --hwm and --lwm lists must have the same length (or one value)")
    pick = lambda x, i: x[0] if len(x) == 1 else x[i]
    return [(pick(t, i), pick(h, i), pick(l, i)) for i in range(n)]


def summarize(raw):
    """Per-checkpoint averages (excluding the first, full checkpoint) and ratios."""
    n = max(raw["checkpoints"] - 1, 0)
    per = lambda v: v / n if n else 0.0
    out = {
        "checkpoints": raw["checkpoints"],
        "instructions": raw["instructions"],
        "interval_instr": raw["interval_instr"],
        "stack_bytes": raw["stack_top"] - raw["stack_base"] + 1,
        "first_checkpoint_bytes": raw["first_checkpoint_bytes"],
        "dirtybit_bytes_per_ckpt": per(raw["dirtybit_bytes"]),
        "exact_bytes_per_ckpt": per(raw["exact_bytes"]),
        "exact_written_bytes_per_ckpt": per(raw["exact_written_bytes"]),
        "stack_stores": raw["stack_stores"],
        "beyond_sp_fraction": raw["beyond_sp_stores"] / raw["stack_stores"] if raw["stack_stores"] else 0.0,
        "exit_code": raw["exit_code"],
        "threads": raw["threads"],
        "thread_switches": raw["thread_switches"],
        "inter_thread_stores": raw["inter_thread_stores"],
        "configs": [],
    }
    for c in raw["configs"]:
        d = dict(c)
        d["bytes_per_ckpt"] = per(c["bytes"])
        d["runs_per_ckpt"] = per(c["runs"])
        d["words_scanned_per_ckpt"] = per(c["words_scanned"])
        d["dirtybit_over_prosper"] = (out["dirtybit_bytes_per_ckpt"] / d["bytes_per_ckpt"]
                                      if d["bytes_per_ckpt"] else None)
        d["over_exact"] = d["bytes_per_ckpt"] / out["exact_bytes_per_ckpt"] if out["exact_bytes_per_ckpt"] else None
        out["configs"].append(d)
    return out


def main(args):
    prog, cmd = program_command(args.command, "hw", "prosper hw [OPTIONS] -- PROGRAM [ARGS]")
    grans = _ints(args.gran, "gran", 8, 128)
    if any(g & (g - 1) for g in grans):
        die("hw: granularities are 8, 16, 32, 64 or 128")
    if args.interval_instr < 1000:
        die("hw: --interval-instr must be at least 1000")
    valgrind.require_tool("hw")
    tables = ",".join(f"{t}:{h}:{l}" for t, h, l in table_configs(args))
    with tempfile.TemporaryDirectory(prefix="prosper-hw-") as tmp:
        log = os.path.join(tmp, "valgrind.%p.log")
        # Children are followed so that wrappers that exec the real program (shell scripts,
        # version shims) are measured; each process writes its own result, keyed by pid, and the
        # one reported is the process we started (an exec keeps the pid).
        vg, env = valgrind.command(prog, cmd[1:], log, [
            f"--gran={','.join(map(str, grans))}", f"--tables={tables}",
            f"--interval-instr={args.interval_instr}", f"--json-out={os.path.join(tmp, 'out.%p.json')}"],
            trace_children=True)
        p = subprocess.Popen(vg, env=env, stdout=sys.stderr if args.json else None)
        p.wait()
        r = p
        jpath = os.path.join(tmp, f"out.{p.pid}.json")
        log = os.path.join(tmp, f"valgrind.{p.pid}.log")
        children = len([f for f in os.listdir(tmp) if f.startswith("out.")]) - 1
        if not os.path.exists(jpath):
            msg = open(log).read().strip().splitlines() if os.path.exists(log) else []
            print(f"prosper hw: the tool produced no result: {msg[-1] if msg else 'valgrind failed'}",
                  file=sys.stderr)
            return 1
        raw = json.load(open(jpath))
    out = summarize(raw)
    out["program"] = cmd
    out["child_processes"] = max(children, 0)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"prosper hw: {out['checkpoints']} checkpoints of {args.interval_instr} instructions; "
              f"stack stores {out['stack_stores']} ({100 * out['beyond_sp_fraction']:.1f}% below the final SP)",
              file=sys.stderr)
        print(f"  per checkpoint: dirtybit {out['dirtybit_bytes_per_ckpt']:.0f} B, "
              f"exact {out['exact_bytes_per_ckpt']:.0f} B", file=sys.stderr)
        print(f"  {'gran':>4} {'table':>5} {'hwm':>3} {'lwm':>3} {'B/ckpt':>10} {'vs dirtybit':>11} "
              f"{'bitmap ld':>10} {'bitmap st':>10} {'mismatch':>8}", file=sys.stderr)
        for c in out["configs"]:
            ratio = f"{c['dirtybit_over_prosper']:.1f}x" if c["dirtybit_over_prosper"] else "-"
            print(f"  {c['gran']:>4} {c['table']:>5} {c['hwm']:>3} {c['lwm']:>3} {c['bytes_per_ckpt']:>10.0f} "
                  f"{ratio:>11} {c['bitmap_loads']:>10} {c['bitmap_stores']:>10} {c['soundness_mismatches']:>8}",
                  file=sys.stderr)
    return r.returncode
